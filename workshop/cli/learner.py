"""The learner's commands: exercises init | list, check LAB (the instructor's, grade and edition: instructor.py).

Their arguments are rows of cli.main.build_parser's table. The work is done in learner.workspace (init) and
grading.check_report; this module reads the arguments and prints.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from workshop import labs
from workshop.cli import runs
from workshop.cli.options import check_lab_names, fail, run_options, stop_on
from workshop.declarations import checks
from workshop.grading import check_report, edition
from workshop.i18n import _, ngettext
from workshop.learner import workspace

# soft_wrap: paths stay copyable. markup off: what the learner wrote or reads (a path, a hint's [k = t_i]) is
# text; the check report's lines, whose markup escapes every text in them, are printed with markup on.
console = Console(highlight=False, soft_wrap=True, markup=False)

STATUS_STYLE = {
    checks.PASSING: "green",
    checks.FAILING: "red",
    checks.NOT_STARTED: "yellow",
    check_report.CHANGED: "cyan",
}


def exercise_labs(names: list[str] | None) -> list[str]:
    """The labs named (default: every lab with exercises); a name that is no lab, or a lab without exercises,
    stops with the list."""
    check_lab_names(names or [])
    having = list(labs.all_exercises())
    unknown = [n for n in names or [] if n not in having]
    if unknown:
        raise fail(
            ngettext(
                "lab {labs} has no exercises; the labs with exercises: {having}",
                "labs {labs} have no exercises; the labs with exercises: {having}",
                len(unknown),
            ).format(labs=", ".join(unknown), having=", ".join(having) or _("none yet"))
        )
    return names or having


def check_targets(words: list[str], only: list[str] | None) -> tuple[list[str], tuple[str, ...]]:
    """`check LAB [EXERCISE...] [LAB ...]` and --only: the labs to run and the exercise ids to grade (none
    named: every exercise). An EXERCISE is a name of the lab before it, or LAB.NAME anywhere."""
    having = labs.all_exercises()
    lab_names, ids = [], []
    for word in [*words, *(only or [])]:
        if word not in having:  # an exercise: NAME of the lab before it, or LAB.NAME
            if word in labs.all_labs():
                exercise_labs([word])  # stops: a lab without exercises
            lab, _dot, name = word.rpartition(".") if "." in word else (None, "", word)
            lab = lab or (lab_names[-1] if lab_names else None)
            if lab not in having:
                exercise_labs([lab or word])  # stops: no such lab
            known = [ex.name for ex in having[lab]]
            if name not in known:
                raise fail(
                    _("lab {lab} has no exercise {name!r}; its exercises: {known}").format(
                        lab=lab, name=name, known=", ".join(known)
                    )
                )
            ids.append(f"{lab}.{name}")
            word = lab
        lab_names += [word] if word not in lab_names else []
    return lab_names or list(having), tuple(dict.fromkeys(ids))


def graded_run(lab_names: list[str], args, work: Path, on_line=None, **others) -> Path:
    """Run the labs on the workspace `work` with `run`'s options (cli.options.run_options) and `others`
    (RunOptions fields); returns the run folder. A stop (Ctrl-C) or an unusable results folder ends the
    command with run's own messages (runs.run_or_stop)."""
    options = run_options(args, lab_names, work=work, **others)
    run_dir = runs.new_run(Path(args.out), lab_names, options)
    runs.run_or_stop(run_dir, lab_names, options, on_line)
    return run_dir


# ---- exercises init ----
def cmd_init(args) -> int:
    work = Path(args.dir)
    lab_names = exercise_labs(args.labs)
    try:
        written, waiting, backup = workspace.init(
            work, lab_names, Path(args.out), args.force, args.learner
        )
    except workspace.WorkspaceExists as e:
        raise fail(
            ngettext(
                "{files} already exists, and init never overwrites your work. Keep it and "
                "init other labs with --lab LAB, or start again from fresh files with --force (yours are "
                "copied to {work}/.backup-<time>/ first).",
                "{files} already exist, and init never overwrites your work. Keep them and "
                "init other labs with --lab LAB, or start again from fresh files with --force (yours are "
                "copied to {work}/.backup-<time>/ first).",
                len(e.files),
            ).format(files=e, work=workspace.display(work))
        ) from None
    if backup:
        console.print(
            _("backed up your files to {folder}/").format(folder=workspace.display(backup))
        )
    for path in written:
        console.print(_("wrote {file}").format(file=workspace.display(path)))
    for ex in waiting:
        console.print(
            _(
                "{file} is written from your run's figures by `python -m workshop check {lab}`"
            ).format(file=workspace.display(work / ex.document), lab=ex.lab)
        )
    command = f"python -m workshop check {lab_names[0]}"
    if work.resolve() != workspace.DEFAULT_DIR.resolve():
        command += f" --work {workspace.display(work)}"
    console.print(
        _("next: write your solutions in {work}/, then `{command}`").format(
            work=workspace.display(work), command=command
        ),
    )
    return 0


# ---- exercises list ----
def cmd_list(args) -> int:
    work = Path(args.work)
    if not work.is_dir():
        raise fail(
            _("{work} is not a folder: make it with `python -m workshop exercises init`").format(
                work=workspace.display(work)
            )
        )
    table = Table(
        Column(_("exercise"), no_wrap=True),  # an id stays whole: it is what `check` takes
        Column(_("status"), no_wrap=True),
        _("title"),
        title=_("exercises in {work}").format(work=workspace.display(work)),
    )
    for s in check_report.workspace_progress(work, Path(args.out)):
        status = Text(_(s.status), style=STATUS_STYLE.get(s.status, "white"))
        if s.last_status:
            status.append(_(" (was {status})").format(status=_(s.last_status)))
        table.add_row(s.exercise.id, status, s.exercise.title)
    # on a terminal, its width; into a file or a pipe, as wide as its longest row, so that no word is cut at an
    # 80-column guess
    if console.is_terminal:
        console.print(table)
        return 0
    wide = console.measure(table, options=console.options.update(width=10_000)).maximum
    Console(highlight=False, markup=False, width=max(console.width, wide)).print(table)
    return 0


# ---- check ----
def cmd_check(args) -> int:
    lab_names, only = check_targets(args.labs, args.only)
    work = Path(args.work)
    # lab -> its report's lines and whether it passed; a lab whose file does not compile is not run: its report is
    # that one box
    with stop_on(workspace.LearnerError):
        reports = {
            lab: (lines, False) for lab, lines in check_report.unrunnable(lab_names, work).items()
        }
    if args.hint and not only:
        raise fail(_("--hint needs the exercise: python -m workshop check LAB EXERCISE --hint"))
    graded = [lab for lab in lab_names if lab not in reports]
    kept = tuple(ex_id for ex_id in only if ex_id.split(".")[0] in graded)
    graded = [] if only and not kept else graded
    declared = {ex.id: ex for lab in graded for ex in labs.exercises(lab)}
    # --hint: take the next hint of each exercise named (the report shows it, with its level)
    asked = kept if args.hint else ()
    for ex_id in asked:
        workspace.count_use(work, "hints", ex_id, most=len(declared[ex_id].hints))
    if args.show:  # counted, as hints are: the instructor's table shows it
        for ex_id in kept or list(declared):
            workspace.count_use(work, "shown", ex_id)
    run_dir = graded_lab_run(graded, args, work, kept) if graded else None
    reports |= {lab: check_report.lab_report(lab, run_dir / lab, kept, asked) for lab in graded}
    # in the order named (a lab is not run, and has no report, when every exercise named is of a lab that does not
    # compile)
    for lines, _passed in (reports[lab] for lab in lab_names if lab in reports):
        console.print("\n".join(["", *lines]), markup=True)
    if run_dir is None:
        return 1
    # the documents whose template needed a run, written now from this one where still missing
    for path in [
        written
        for lab in graded
        for ex in labs.exercises(lab)
        if ex.document and (written := workspace.write_waiting_document(work, ex, run_dir / lab))
    ]:
        console.print(
            _("wrote {file} from this run's figures: fill it in, then check again").format(
                file=workspace.display(path)
            ),
        )
    console.print(_("run folder: {run}").format(run=workspace.display(run_dir)))
    return 0 if all(passed for _lines, passed in reports.values()) else 1


def graded_lab_run(lab_names: list[str], args, work: Path, only: tuple[str, ...]) -> Path:
    """check's run of its labs on the workspace (re-grading against the latest run where it can), the learner's
    code in a worker that imports the learner edition (never the references: edition.cached_learner)."""
    against = {} if args.rerun else check_report.regrade_sources(Path(args.out), work, only)
    console.print(
        _("grading {work} with the checks of {labs}").format(
            work=workspace.display(work), labs=", ".join(lab_names)
        ),
    )

    def on_line(lab: str, line: str) -> None:
        if line.startswith(f"[{lab}]"):
            console.print(line, style="dim")

    # your code runs on the learner edition, where the references are stubs, as in the learner's image
    with stop_on(OSError):
        code = edition.cached_learner(
            lambda: console.print(_("building the learner edition your code runs with, once"))
        )
    options = {"only": only, "show": args.show, "against": against, "learner_edition": str(code)}
    return graded_run(lab_names, args, work, on_line, **options)
