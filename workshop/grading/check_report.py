"""`check LAB`: grade the learner's workspace with the lab's own checks, and say per exercise where they stand;
`exercises list`: where a learner stands on each exercise, read from their workspace and their runs.

The lab runs in its own process, as `run` does, with the workspace (harness.runner.run_labs): the usual run
folder, whose manifest and result.json record the workspace and its files' hashes. Then, per exercise: passed
or not, the failing check's value against its threshold, the pointed message, the hint and the handout section.

In the list, an exercise whose stub is still in the file as init wrote it (a document: unchanged since init, or
not written yet) is "not started", run or no run. Otherwise the newest graded run of this workspace under
results/ says how it stood at that check (result.json records the workspace and its files' hashes): if the file
changed since, "changed since last check"; with no such run, "not checked yet".
"""

from __future__ import annotations

import re
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.markup import escape

from workshop import i18n, labs
from workshop.declarations import checks
from workshop.declarations.exercise import Exercise
from workshop.foundations import results
from workshop.i18n import N_, _, ngettext
from workshop.learner import workspace

MARKS = {  # status -> (style, the mark printed before the exercise's id)
    checks.PASSING: ("green", N_("PASS")),
    checks.FAILING: ("red", N_("FAIL")),
    checks.NOT_STARTED: ("yellow", N_("TODO")),
    checks.NOT_GRADED: ("red", "----"),
}


def mark(status: str) -> str:
    """The status's mark in the language in use, padded to the widest one so that the ids line up."""
    width = max(len(_(text)) for _style, text in MARKS.values())
    style, text = MARKS.get(status, ("white", status))
    return f"[{style}]{_(text):<{width}}[/{style}]"


def unrunnable(lab_names: list[str], work: Path) -> dict[str, list[str]]:
    """Stop before any lab runs when the workspace or a lab's file is not there: workspace.LearnerError, whose one
    line says how to make it. (A lab without exercises never gets here: the command line stops at its name,
    cli.learner.exercise_labs.) Else lab -> its report, for each lab whose workspace file does not compile. Such
    a lab is not run: a file that does not compile has no exercise to grade (the learner's code is compiled, not
    run, here)."""
    if not Path(work).is_dir():
        raise workspace.LearnerError(
            _("{work} is not a folder: make your workspace with `{command}`").format(
                work=workspace.display(work),
                command=f"python -m workshop exercises init {workspace.display(work)}",
            )
        )
    reports = {}
    for lab in lab_names:
        for path in (Path(work) / n for n in workspace.lab_files(lab) if n.endswith(".py")):
            if not path.is_file():
                raise workspace.LearnerError(
                    _("{file} does not exist: write it with `{command}`").format(
                        file=workspace.display(path),
                        command=f"python -m workshop exercises init {workspace.display(work)} --lab {lab}",
                    )
                )
            try:
                # a SyntaxWarning is the worker's to report, in its exercise
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as e:  # ValueError: a null byte (Python 3.11)
                line = getattr(e, "lineno", None) or "?"
                shown = workspace.display(path)
                error = f"{type(e).__name__}: {getattr(e, 'msg', None) or e}"
                reports.setdefault(  # the first file of the lab that does not compile
                    lab,
                    [
                        f"[bold]{lab}[/bold]  ({escape(shown)})",
                        f"  {mark(checks.FAILING)}  "
                        + escape(
                            _(
                                "your file does not compile: {file} line {line}; no exercise of it was graded"
                            ).format(file=shown, line=line)
                        ),
                        *wrapped(_("why"), f"{shown}:{line}: {error}"),
                    ],
                )
    return reports


def regrade_sources(results_root: Path, work: Path, ids: tuple[str, ...]) -> dict[str, str]:
    """Lab -> the lab folder of the learner's latest run of it (a run of the lab, not a re-grading), for each
    lab whose exercises named in `ids` are all graded from a run's artifacts (Exercise.from_run) and that can
    grade them from that run's files (LabSpec.regrade). Those labs are not run again. A re-grade is never taken
    for a run: its result.json says what it was graded against (harness.child.regrade; harness.runner.settle
    where its process died), also when it raised or was stopped."""
    sources = {}
    for lab in dict.fromkeys(ex_id.split(".")[0] for ex_id in ids):
        wanted = [ex for ex in labs.exercises(lab) if ex.id in ids]
        graded = graded_runs(results_root, lab, work)
        runs = [r for r, result in graded if not result.get("graded_against")]
        if runs and all(ex.from_run for ex in wanted) and labs.get(lab).regrade:
            sources[lab] = str((runs[0] / lab).resolve())
    return sources


def exercise_lines(ex_id: str, entry: dict, ex: Exercise | None, asked: bool = False) -> list[str]:
    """One exercise of the report: its mark and title, then why it failed, its hint (the text only when the
    learner asked for it with --hint: `asked`; else the command that shows it), and what to read (rich markup,
    every text the learner reads escaped)."""
    status = entry["status"]
    lines = [f"  {mark(status)}  [bold]{escape(ex_id)}[/bold]  {escape(entry['title'])}"]
    failed = entry.get("failed_check")
    if status == checks.NOT_STARTED:
        lines += wrapped(_("to do"), ex.statement if ex else "")
    elif failed:
        lines += wrapped(_("check"), checks.outcome(failed))
        lines += wrapped(_("why"), failed.get("message") or "")
    elif status == checks.NOT_GRADED:
        lines += wrapped(_("why"), _("the lab ended before grading it: see its log.txt"))
    if ex and (asked or (failed and status != checks.PASSING)):
        lines += wrapped(_("hint"), hint_text(ex, entry.get("hints_taken", 0), asked))
    if status != checks.PASSING:
        lines += wrapped(_("read"), entry["handout"])
    return lines


def hint_text(ex: Exercise, taken: int, asked: bool) -> str:
    """The hint the learner asked for and its level ('... (hint 2 of 3; `...` shows the next)'), or, not asked,
    the command that shows the next one. `taken`: the hints asked for so far, this one included."""
    levels = len(ex.hints)
    command = f"python -m workshop check {ex.lab} {ex.name} --hint"
    if not asked:
        return _("`{command}` shows hint {k} of {n}").format(
            command=command, k=min(taken + 1, levels), n=levels
        )
    k = min(max(taken, 1), levels)
    where = _("hint {k} of {n}").format(k=k, n=levels) + (
        _("; `{command}` shows the next").format(command=command)
        if k < levels
        else _("; the last one")
    )
    return f"{ex.hint(k)} ({where})"


LABELS = (N_("to do"), N_("check"), N_("why"), N_("hint"), N_("read"))  # wrapped()'s


QUOTED = re.compile(r"`[^`]+`")  # a command as the messages quote it
NO_BREAK = "\u00a0"


def wrapped(label: str, text: str) -> list[str]:
    """'        label  text' (label: one of LABELS, translated), wrapped at 100 columns, continuation lines
    aligned with the text, the text escaped for rich's markup (a hint's [k = t_i] is text); [] for no text."""
    if not text.strip():
        return []
    width = 1 + max(len(_(name)) for name in LABELS)  # one column for every label, in any language
    indent = " " * (8 + width + 1)
    # a path or a `command` is never broken across lines: it stays copyable (a no-break space holds a
    # command's words together while wrapping)
    joined = QUOTED.sub(lambda m: m[0].replace(" ", NO_BREAK), " ".join(text.split()))
    body = textwrap.wrap(joined, 100 - len(indent), break_long_words=False, break_on_hyphens=False)
    body = [escape(line.replace(NO_BREAK, " ")) for line in body]
    return [f"        [dim]{label:<{width}}[/dim] {body[0]}", *[indent + line for line in body[1:]]]


def lab_report(
    lab: str, lab_dir: Path, only: tuple[str, ...] = (), asked: tuple[str, ...] = ()
) -> tuple[list[str], bool]:
    """The report of one lab's graded run (of the exercises in `only`, when given; `asked`: those whose hint
    the learner asked for), and whether every exercise reported and the lab's own checks passed. A failing
    check of the lab's own (it belongs to no exercise: the lab ran your code as a whole) is named on its own,
    with why, so that every exercise passing never hides a failing lab."""
    result = results.read_json(lab_dir / "result.json")
    declared = {ex.id: ex for ex in labs.exercises(lab)}
    entries = {k: e for k, e in result.get("exercises", {}).items() if not only or k in only}
    lines = [f"[bold]{lab}[/bold]  ({escape(workspace.display(lab_dir))})"]
    if against := result.get("graded_against"):
        lines.append("  " + escape(_("re-graded against your run {run}").format(run=against)))
    for ex_id, entry in entries.items():
        lines += exercise_lines(ex_id, entry, declared.get(ex_id), ex_id in asked)
    own = [c for c in result["checks"] if not c.get("exercise") and not c["passed"]]
    if own:
        # (marked outside the f-string: Babel extracts plain calls)
        itself = escape(_("the lab itself"))
        lines.append(
            f"  {mark(checks.FAILING)}  [bold]{itself}[/bold]  "
            + escape(_("checks of no one exercise: the lab ran your code as a whole"))
        )
    for c in own:
        lines += wrapped(_("check"), checks.outcome(c))
        lines += wrapped(_("why"), c.get("message") or _("the lab's log.txt shows what it printed"))
    passed = sum(e["status"] == checks.PASSING for e in entries.values())
    lines.append(
        ngettext(
            "  {passed} of {total} exercise passing",
            "  {passed} of {total} exercises passing",
            len(entries),
        ).format(passed=passed, total=len(entries))
        + (
            ngettext(
                "; {k} check of the lab itself failing",
                "; {k} checks of the lab itself failing",
                len(own),
            ).format(k=len(own))
            if own
            else ""
        )
    )
    return lines, passed == len(entries) and not own


# Where a learner stands besides the graded statuses (checks.PASSING, ...); translated where shown.
CHANGED = N_("changed since last check")
NOT_CHECKED = N_("not checked yet")


@dataclass(frozen=True)
class Standing:
    exercise: Exercise
    status: str
    last_status: str | None = None  # the status at the last check, when the file changed since


def graded_runs(results_root: Path, lab: str, work: Path) -> list[tuple[Path, dict]]:
    """(run folder, the lab's result.json) of every run that graded this workspace's lab, newest first."""
    work_id = workspace.read_record(work).get("id")
    found = []
    for run_dir in results.runs(results_root):
        try:
            result = results.read_json(run_dir / lab / "result.json")
        except (OSError, ValueError):
            continue  # no such lab in that run, or a result cut short
        impl = result.get("implementation") or {}
        same_id = work_id is not None and impl.get("workspace_id") == work_id
        if impl.get("kind") == "workspace" and (same_id or impl.get("work") == str(work.resolve())):
            found.append((run_dir, result))
    return found


def untouched(ex: Exercise, work: Path) -> bool:
    """The exercise is as init left it: its stub still in <lab>.py, or its document missing or unchanged."""
    path = work / (ex.document or f"{ex.lab}.py")
    if not path.is_file():
        return True
    if ex.document:
        return workspace.read_record(work).get("files", {}).get(ex.document) == (
            workspace.file_sha256(path)
        )
    text = path.read_text(encoding="utf-8", errors="replace")
    # the exercise's stub as init writes it in each language (its docstring and message are translated): a
    # workspace made in Spanish is still "not started" when listed in English
    stubs = in_every_language(
        lambda: {e.stub_code() for e in labs.exercises(ex.lab) if e.id == ex.id}
    )
    return any(stub in text for stub in stubs)


def in_every_language(made: Callable[[], set[str]]) -> set[str]:
    """What `made()` makes in each language the workshop speaks, together."""
    found = set()
    for lang in i18n.LANGUAGES:
        with i18n.using(lang):
            found |= made()
    return found


def standing(ex: Exercise, work: Path, runs: list[tuple[Path, dict]]) -> Standing:
    """Where the learner stands on `ex`, given the lab's graded runs of this workspace (graded_runs): the newest
    that graded `ex` (a run of other exercises of the lab left it ungraded), else the newest run of the lab."""
    if untouched(ex, work):
        return Standing(ex, checks.NOT_STARTED)
    status = lambda result: result.get("exercises", {}).get(ex.id, {}).get("status")  # noqa: E731
    graded = (result for _run, result in runs if status(result) not in (None, checks.NOT_GRADED))
    last = next(graded, runs[0][1] if runs else None)
    if last is None:
        return Standing(ex, NOT_CHECKED)
    name = ex.document or f"{ex.lab}.py"
    graded = status(last) or checks.NOT_GRADED
    recorded = last["implementation"].get("sha256", {}).get(name)
    if recorded != workspace.file_sha256(work / name):
        return Standing(ex, CHANGED, graded)
    return Standing(ex, graded)


def workspace_progress(work: Path, results_root: Path) -> list[Standing]:
    """Every exercise of every lab, with where the learner stands on it."""
    return [
        standing(ex, work, runs)
        for lab, exercises in labs.all_exercises().items()
        for runs in [graded_runs(results_root, lab, work)]
        for ex in exercises
    ]
