"""A lab's record of one run: result.json (every check, each exercise's entry) and summary.md (the verdict, the
lab's own summary, the exercises and the checks table). Written by the lab's process (harness.child), or by the
parent when that process died before it could (harness.runner.settle).
"""

from __future__ import annotations

from pathlib import Path

from workshop.declarations.checks import Check, all_passed, bound, outcome, written
from workshop.foundations import atomic
from workshop.i18n import _


def write_result(
    out_dir: Path,
    name: str,
    device: str,
    checks: list[Check],
    duration: float,
    summary: str,
    extra: dict | None = None,
) -> dict:
    """Write summary.md and result.json; returns what result.json holds (its writer's caller need not read it)."""
    result = {
        "lab": name,
        "passed": all_passed(checks),
        "device": device,
        "duration_s": round(duration, 2),
        "checks": [c.as_dict() for c in checks],
        **(extra or {}),
    }
    atomic.write_text(
        out_dir / "summary.md",
        summary_frame(name, result["passed"], summary, checks, result.get("exercises", {})),
    )
    atomic.write_json(out_dir / "result.json", result)
    return result


def summary_frame(
    name: str, passed: bool, summary: str, checks: list[Check], exercises: dict[str, dict]
) -> str:
    """summary.md: the verdict, the lab's own summary (its template's), the exercises, the checks table."""
    verdict = _("Lab `{lab}`: passed") if passed else _("Lab `{lab}`: FAILED")
    # (Babel extracts no call in an f-string)
    marks = {True: _("pass"), False: "**" + _("FAIL") + "**"}
    rows = "\n".join(
        f"| {marks[bool(c.passed)]} | {c.name} | {written(c.as_dict()['value'])} | {bound(c.as_dict(), written)} |"
        for c in checks
    )
    header = "| | {} | {} | {} |\n|---|---|---|---|\n".format(_("check"), _("value"), _("expected"))
    checks_heading = _("Checks")
    return (
        f"# {verdict.format(lab=name)}\n\n{summary.strip()}\n\n{exercises_md(exercises)}"
        f"## {checks_heading}\n\n{header}{rows}\n"
    )


def exercises_md(exercises: dict[str, dict]) -> str:
    """The exercises' section of summary.md: one row each, with the failed check and the hint."""
    if not exercises:
        return ""
    rows = [
        f"| {ex_id} | {_(r['status'])} | {outcome(r['failed_check']) if r['failed_check'] else ''} "
        f"| {r['hint'] or ''} |"
        for ex_id, r in exercises.items()
    ]
    header = "| {} | {} | {} | {} |\n|---|---|---|---|\n".format(
        _("exercise"), _("status"), _("failed check"), _("hint")
    )
    return "## " + _("Exercises") + "\n\n" + header + "\n".join(rows) + "\n\n"


def stopped_check(why: str) -> Check:
    """The failed check of a lab that was stopped (a signal, its time limit) or whose process died."""
    return Check(_("lab ran to completion"), False, why, _("not stopped"))
