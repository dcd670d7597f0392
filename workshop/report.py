"""REPORT.md: one page per run, every lab's summary with its pictures, links relative to the run folder."""

from __future__ import annotations

import re
from pathlib import Path

from workshop import atomic, results


def write_report(run_dir: Path) -> Path:
    manifest = results.read_json(run_dir / "manifest.json")
    lines = [
        f"# Workshop run {manifest['run_id']}",
        "",
        f"- command: `{' '.join(manifest['command'])}`",
        f"- device: {manifest['device']} ({manifest['device_name']}); torch {manifest['torch']}, "
        f"triton {manifest['triton']}, CUDA {manifest['cuda']}, Python {manifest['python']}",
        f"- git revision: {manifest['git_revision']}; started {manifest['start_time']}, ended {manifest['end_time']}",
        "",
        "| lab | passed | seconds |",
        "|---|---|---|",
    ]
    lines += [
        f"| [{lab}](#{lab}) | {s['passed']} | {s['duration_s']} |"
        for lab, s in manifest["labs"].items()
    ]
    for lab in manifest["labs"]:
        lab_dir = run_dir / lab
        summary = (
            (lab_dir / "summary.md").read_text()
            if (lab_dir / "summary.md").is_file()
            else "(no summary)"
        )
        # Re-root the summary's relative links (pictures, files) at the run folder, and demote its headings.
        summary = re.sub(r"\]\((?!https?:|#|/)([^)]+)\)", rf"]({lab}/\1)", summary)
        summary = re.sub(r"^#", "##", summary, flags=re.M)
        pictures = sorted(p.name for p in lab_dir.glob("*.png"))
        linked = set(re.findall(r"\(" + re.escape(lab) + r"/([^)]+\.png)\)", summary))
        lines += ["", f'<a id="{lab}"></a>', "", summary.strip()]
        lines += [f"\n![{p}]({lab}/{p})" for p in pictures if p not in linked]
    return atomic.write_text(run_dir / "REPORT.md", "\n".join(lines) + "\n")
