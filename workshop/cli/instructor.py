"""The instructor's commands: grade PATH... (a table of learners x exercises) and edition learner (the workshop as
learners get it).

Their arguments are rows of cli.main.build_parser's table, after the learner's commands (learner.py), whose lab
names and runs of a workspace they share. The work is done in grading.gradebook,
grade_table and edition; this module reads the arguments and prints.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from workshop.cli.learner import console, exercise_labs, graded_run
from workshop.cli.options import fail, stop_on
from workshop.foundations import device, worker_container, worker_process
from workshop.grading import edition, grade_table, gradebook
from workshop.i18n import _

BUILD = "docker compose build learner-edition"  # the learner edition's image: grade's sandbox


# ---- grade ----
def cmd_grade(args) -> int:
    lab_names = exercise_labs(args.labs)
    root = Path(args.out)
    out_dir = (
        Path(args.to) if args.to else root / time.strftime("grades-%Y%m%d-%H%M%S", time.gmtime())
    )
    paths = [Path(p) for p in args.paths]
    with stop_on(OSError, ValueError):
        roster = gradebook.read_roster(Path(args.roster)) if args.roster else None
    # the learner edition built for the class (bwrap, native) is removed when the stack closes; an error of the
    # file system (a --to folder that has its tables already, a results root it cannot write) is one line
    with contextlib.ExitStack() as stack, stop_on(OSError):
        # each hand-in's code runs where `sandbox` (RunOptions fields) says
        sandbox = grade_sandbox(args.sandbox, [*paths, root], stack)
        # natively a worker of this user's can write the edition it imports: grade_integrity watches it as the code
        native_edition = sandbox.get("learner_edition")
        files = grade_table.TableFiles(out_dir, len(paths), isolated=not native_edition)
        # a .pyc that appears in the code is then a hand-in's doing
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        # grade_integrity makes every lab's stub here (workshop.ops among the references), after torch.load has
        # imported triton: its interpreter must be chosen first where there is no GPU
        device.use_triton_interpreter()

        def check_workspace(work: Path) -> Path:
            console.print(_("  running the checks of {labs}").format(labs=", ".join(lab_names)))
            return graded_run(lab_names, args, work, **sandbox)

        try:
            csv_path, md_path = gradebook.grade_all(
                paths,
                check_workspace,
                files,
                lambda path: console.print(_("grading {path}").format(path=path)),
                root,
                roster,
                (Path(native_edition),) if native_edition else (),
            )
        except SystemExit:  # stopped (Ctrl-C): what was graded is in the partial table
            if files.partial[0].exists():
                console.print(
                    _("partial table: {csv} and {md}").format(
                        csv=files.partial[0], md=files.partial[1]
                    )
                )
            raise
    console.print(md_path.read_text(encoding="utf-8"))
    console.print(_("wrote {csv} and {md}").format(csv=csv_path, md=md_path))
    return 0


def grade_sandbox(choice: str, hidden: list[Path], stack: contextlib.ExitStack) -> dict:
    """Where each hand-in's code runs, said plainly, as RunOptions fields: {"worker_image": ...} (a container of
    its own), {"namespace_sandbox": ...} (bubblewrap, the learner edition built here for it, `hidden` and the
    instructor's package out of its sight), or {"learner_edition": ...} (a worker process of this machine,
    unisolated, on the learner edition built here for it: the references are stubs there, as in the others)."""
    problem = worker_container.docker_problem()
    if choice == "docker" and problem:
        raise fail(
            _("--sandbox docker: {problem}; build it with `{command}`").format(
                problem=problem, command=BUILD
            )
        )
    if choice in ("auto", "docker") and not problem:
        worker_container.sweep_stale()
        console.print(
            _(
                "sandbox: each hand-in's code runs in a container of its own ({image}: no network, read-only, "
                "no capabilities, memory, process and CPU limits), which sees no other hand-in"
            ).format(image=worker_container.LEARNER_IMAGE)
        )
        return {"worker_image": worker_container.LEARNER_IMAGE}
    if problem and choice == "auto":
        console.print(
            _("no Docker sandbox here ({problem}; `{command}` builds it)").format(
                problem=problem, command=BUILD
            )
        )
    if choice in ("auto", "bwrap"):
        why = worker_process.namespace_problem()
        if why is None:
            return {"namespace_sandbox": namespace_sandbox(hidden, stack)}
        if choice == "bwrap":
            raise fail(_("--sandbox bwrap: {problem}").format(problem=why))
        console.print(_("no namespace sandbox here ({problem})").format(problem=why))
    console.print(
        _(
            "hand-ins run UNISOLATED: each hand-in's code runs as a process of this machine, with process "
            "limits only; it can read and change other hand-ins, the results and your files. The table is "
            "titled not isolated: a rehearsal, not a grade. Grade with Docker."
        )
    )
    return {"learner_edition": str(class_edition(stack))}


def class_edition(stack: contextlib.ExitStack) -> Path:
    """The learner edition, built for this class (never the cached one of `check`, which a hand-in's worker of
    this user's could have written) in a folder every uid can read, removed when `stack` closes: the code each
    hand-in's worker imports."""
    folder = Path(
        stack.enter_context(tempfile.TemporaryDirectory(dir=worker_process.scratch_root()))
    )
    folder.chmod(0o755)  # a worker of its own uid reads the edition's code
    console.print(
        _("building the learner edition the hand-ins' code runs on (its references are stubs)")
    )
    # in a Python of its own: the edition of this package's labs, whatever stands in for them here (an OSError
    # that says why it could not is cmd_grade's one line)
    edition.build_apart(folder / "edition")
    return folder / "edition"


def namespace_sandbox(hidden: list[Path], stack: contextlib.ExitStack) -> dict:
    """The learner edition, built for this class (class_edition), and what the sandbox hides: `hidden` (the
    hand-ins, the results), the instructor's package and, where Python does not live in it, the home folder."""
    folder = class_edition(stack).parent
    home = Path.home().resolve()
    python = [Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.executable)]
    keep_home = any(p.is_relative_to(home) for p in [*python, folder])
    folders = [*hidden, worker_process.code_root() / "workshop", *([] if keep_home else [home])]
    console.print(
        _(
            "sandbox: each hand-in's code runs in a namespace sandbox of its own (bubblewrap: the learner "
            "edition's code, no network, its own processes and /tmp, the rest of the machine read-only, the "
            "other hand-ins and the results out of its sight)"
        )
    )
    return {
        "code": str(folder / "edition"),
        "hidden": sorted({str(f.resolve()) for f in folders if f.is_dir()}),
    }


def cmd_edition(args) -> int:

    with stop_on(FileExistsError):
        report = edition.build_learner(Path(args.out))
    console.print(
        _(
            "the learner edition in {out}: {stubbed} references replaced by their stubs, {deleted} files of "
            "model answers deleted, {helpers} helpers only a reference used removed (its EDITION.json lists them)"
        ).format(
            out=args.out,
            stubbed=len(report.stubbed),
            deleted=len(report.deleted),
            helpers=len(report.helpers_removed),
        )
    )
    # Said, not refused: the edition is written (an image build must not stop for it); its owner removes it.
    for reference in report.left_bodies:
        console.print(
            _("a reference's code is still in the edition: {reference}").format(reference=reference)
        )
    for quoted in report.quoted_in:
        console.print(_("a handout quotes a reference's lines: {where}").format(where=quoted))
    return 0
