"""REPORT.md: one page per run, every lab's summary with its pictures, links relative to the run folder.

Every file it reads is validated (results.read_manifest / read_result, summaries as UTF-8): a corrupt or missing
file is named in the report and returned as a problem, as is a run that never finished; the caller exits
non-zero then. Only an unreadable manifest stops it (results.CorruptFile): without it there is no run to report.
"""

from __future__ import annotations

import re
from pathlib import Path

from workshop import i18n
from workshop.foundations import atomic, results
from workshop.i18n import _


def write_report(run_dir: Path, lang: str | None = None) -> tuple[Path, list[str]]:
    """Write run_dir/REPORT.md in `lang`, else in the run's language (its summaries are; English for a run from
    before runs recorded their language); returns its path and the problems found (empty for a sound, finished
    run)."""
    manifest = results.read_manifest(run_dir)
    recorded = manifest.get("lang")
    with i18n.using(lang or (recorded if recorded in i18n.LANGUAGES else i18n.DEFAULT)):
        state = results.run_state(manifest)
        problems = (
            []
            if state.status == "finished"
            else [
                _("run {run} is incomplete: {state}").format(run=run_dir.name, state=state.detail)
            ]
        )
        lines = [
            "# " + _("Workshop run {run}").format(run=manifest["run_id"]),
            "",
            *([f"> **{problems[0]}**", ""] if problems else []),
            *_facts(manifest),
            "",
            "| {} | {} | {} |".format(_("lab"), _("passed"), _("seconds")),
            "|---|---|---|",
        ]
        sections = []
        for lab, status in manifest["labs"].items():
            passed, summary = _lab(run_dir / lab, problems)
            lines.append(f"| [{lab}](#{lab}) | {passed} | {status.get('duration_s')} |")
            sections += ["", f'<a id="{lab}"></a>', "", summary.strip()]
            sections += _unlinked_pictures(run_dir / lab, summary)
        not_run = [lab for lab in manifest.get("labs_planned") or [] if lab not in manifest["labs"]]
        lines += ["| {} | {} | |".format(lab, _("not run")) for lab in not_run]
        path = atomic.write_text(run_dir / "REPORT.md", "\n".join(lines + sections) + "\n")
        return path, problems


def _facts(manifest: dict) -> list[str]:
    """The run's command, machine and versions, and when it ran."""
    get = manifest.get
    return [
        _("- command: `{command}`").format(command=" ".join(manifest["command"])),
        _(
            "- device: {device} ({name}); torch {torch}, triton {triton}, CUDA {cuda}, Python {python}"
        ).format(
            device=manifest["device"],
            name=get("device_name"),
            torch=get("torch"),
            triton=get("triton"),
            cuda=get("cuda"),
            python=get("python"),
        ),
        _("- git revision: {revision}; started {start}, ended {end}").format(
            revision=get("git_revision"), start=manifest["start_time"], end=get("end_time")
        ),
    ]


def _lab(lab_dir: Path, problems: list[str]) -> tuple[object, str]:
    """(passed: yes/no, its summary re-rooted at the run folder); a corrupt file is added to problems."""
    lab = lab_dir.name
    try:
        passed = _("yes") if results.read_result(lab_dir)["passed"] else _("no")
    except results.CorruptFile as e:
        problems.append(str(e))
        passed = _("unreadable result.json")
    path = lab_dir / "summary.md"
    try:
        summary = path.read_bytes().decode("utf-8") if path.is_file() else _("(no summary)")
    except UnicodeDecodeError as e:
        problems.append(
            _(
                "{path} is not UTF-8 text ({error}); run the lab again: python -m workshop run {lab}"
            ).format(path=path, error=e, lab=lab)
        )
        summary = _("(summary.md is unreadable)")
    # Re-root the summary's relative links (pictures, files) at the run folder, and demote its headings.
    summary = re.sub(r"\]\((?!https?:|#|/)([^)]+)\)", rf"]({lab}/\1)", summary)
    return passed, re.sub(r"^#", "##", summary, flags=re.M)


def _unlinked_pictures(lab_dir: Path, summary: str) -> list[str]:
    lab = lab_dir.name
    linked = set(re.findall(r"\(" + re.escape(lab) + r"/([^)]+\.png)\)", summary))
    return [
        f"\n![{p.name}]({lab}/{p.name})"
        for p in sorted(lab_dir.glob("*.png"))
        if p.name not in linked
    ]
