"""`check LAB`: grade the learner's workspace with the lab's own checks, and say per exercise where they stand.

The lab runs in its own process, as `run` does, with the workspace (harness.runner.run_labs): the usual run
folder, whose manifest and result.json record the workspace and its files' hashes. Then, per exercise: passed
or not, the failing check's value against its threshold, the pointed message, the hint and the handout section.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from workshop import labs
from workshop.grading import checks, workspace, workspace_init
from workshop.harness import results
from workshop.i18n import N_, _, ngettext

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


class CheckRefused(Exception):
    """The check cannot start (one line: what is wrong and the fix)."""


def refuse_early(lab_names: list[str], work: Path) -> None:
    """Stop before any lab runs when the workspace or a lab's file is not there: say how to make it."""
    without = [lab for lab in lab_names if not labs.exercises(lab)]
    if without:
        having = ", ".join(labs.all_exercises()) or _("none yet")
        raise CheckRefused(
            ngettext(
                "lab {labs} has no exercises; the labs with exercises: {having}",
                "labs {labs} have no exercises; the labs with exercises: {having}",
                len(without),
            ).format(labs=", ".join(without), having=having)
        )
    if not Path(work).is_dir():
        raise CheckRefused(
            _("{work} is not a folder: make your workspace with `{command}`").format(
                work=workspace.display(work),
                command=f"python -m workshop exercises init {workspace.display(work)}",
            )
        )
    for lab in lab_names:
        names = [n for n in workspace.lab_files(lab) if n.endswith(".py")]
        missing = [Path(work) / n for n in names if not (Path(work) / n).is_file()]
        if missing:
            raise CheckRefused(
                _("{file} does not exist: write it with `{command}`").format(
                    file=workspace.display(missing[0]),
                    command=f"python -m workshop exercises init {workspace.display(work)} --lab {lab}",
                )
            )


def write_waiting_documents(lab_names: list[str], work: Path, run_dir: Path) -> list[Path]:
    """Documents whose template needed a run: written now from this run, where still missing."""
    written = []
    for lab in lab_names:
        for ex in (ex for ex in labs.exercises(lab) if ex.document):
            path = workspace_init.write_waiting_document(work, ex, run_dir / lab)
            written += [path] if path else []
    return written


def value_text(value) -> str:
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def exercise_lines(ex_id: str, entry: dict, statement: str) -> list[str]:
    """One exercise of the report: its mark and title, then why it failed and what to read (rich markup)."""
    status = entry["status"]
    lines = [f"  {mark(status)}  [bold]{ex_id}[/bold]  {entry['title']}"]
    failed = entry.get("failed_check")
    if status == checks.NOT_STARTED:
        lines += wrapped(_("to do"), statement)
    elif failed:
        got = _("{name}: {value} (threshold {threshold})").format(
            name=failed["name"],
            value=value_text(failed["value"]),
            threshold=value_text(failed["threshold"]),
        )
        lines += wrapped(_("check"), got)
        message, hint = failed.get("message") or "", entry.get("hint") or ""
        lines += wrapped(_("why"), message)
        lines += wrapped(_("hint"), hint if hint != message else "")
    elif status == checks.NOT_GRADED:
        lines += wrapped(_("why"), _("the lab ended before grading it: see its log.txt"))
    if status != checks.PASSING:
        lines += wrapped(_("read"), entry["handout"])
    return lines


LABELS = (N_("to do"), N_("check"), N_("why"), N_("hint"), N_("read"), N_("lab"))  # wrapped()'s


def wrapped(label: str, text: str) -> list[str]:
    """'        label  text' (label: one of LABELS, translated), wrapped at 100 columns, continuation lines
    aligned with the text; [] for no text."""
    if not text.strip():
        return []
    width = 1 + max(len(_(name)) for name in LABELS)  # one column for every label, in any language
    indent = " " * (8 + width + 1)
    body = textwrap.wrap(" ".join(text.split()), 100 - len(indent))
    first = f"        [dim]{label:<{width}}[/dim] {body[0]}"
    return [first, *[indent + line for line in body[1:]]]


def lab_report(lab: str, lab_dir: Path) -> tuple[list[str], bool]:
    """The report of one lab's graded run, and whether every exercise (and the lab's own checks) passed."""
    result = results.read_json(lab_dir / "result.json")
    statements = {ex.id: ex.statement for ex in labs.exercises(lab)}
    entries = result.get("exercises", {})
    lines = [f"[bold]{lab}[/bold]  ({workspace.display(lab_dir)})"]
    for ex_id, entry in entries.items():
        lines += exercise_lines(ex_id, entry, statements.get(ex_id, ""))
    own = [c for c in result["checks"] if not c.get("exercise") and not c["passed"]]
    for c in own:
        lines += wrapped(
            _("lab"),
            _("the lab's own check failed: {name}: {value} (threshold {threshold})").format(
                name=c["name"], value=value_text(c["value"]), threshold=value_text(c["threshold"])
            ),
        )
    passed = sum(e["status"] == checks.PASSING for e in entries.values())
    lines.append(
        ngettext(
            "  {passed} of {total} exercise passing",
            "  {passed} of {total} exercises passing",
            len(entries),
        ).format(passed=passed, total=len(entries))
    )
    return lines, passed == len(entries) and not own
