"""The run's compiles in tlparse, the report PyTorch's compiler team reads: every Dynamo frame with its graph,
guards, AOTAutograd's graphs and Inductor's code, from the structured trace torch writes under TORCH_TRACE.

`TORCH_TRACE=DIR python ...` is read when torch is imported; the lab's process has imported torch already, so
`send_torch_trace` points torch's own trace handler (a LazyTraceHandler, which opens its file at the first
record) at the lab's folder instead. `make_report` then runs `tlparse TRACE -o OUT --no-browser`. tlparse is a
separate program (pinned in requirements-pinned.txt); where it is not installed the report is not made and
the report's `reason` says why: the raw trace stays for a machine that has it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from workshop.i18n import _
from workshop.lab_api import LabContext

TRACE_DIR = "torch_trace"  # the raw structured trace, one .log per process
REPORT_DIR = "tlparse"  # tlparse's HTML report: tlparse/index.html
TLPARSE_PIN = "tlparse==0.4.3"


def send_torch_trace(folder: Path | None) -> None:
    """Send torch's structured trace (the records TORCH_TRACE would) to `folder`: call it before compiling and
    before torch._logging.set_logs, which attaches the handler. None: close the trace file and send later records
    nowhere (as when TORCH_TRACE is unset)."""
    internal = torch._logging._internal
    if folder is None and internal.LOG_TRACE_HANDLER is not None:
        internal.LOG_TRACE_HANDLER.close()
    internal.LOG_TRACE_HANDLER = internal.LazyTraceHandler(None if folder is None else str(folder))
    torch._logging._init_logs()


def tlparse_program() -> str | None:
    """tlparse beside this Python (a venv's bin/, not always on PATH), else on PATH."""
    beside = Path(sys.executable).parent / "tlparse"
    return str(beside) if beside.is_file() else shutil.which("tlparse")


def make_report(trace_dir: Path, out_dir: Path) -> dict:
    """Run tlparse on the trace; once the report is made, the raw trace goes (the report keeps it as raw.log).
    Returns {"index": tlparse/index.html when made, else None; "reason": why it was not made ("" when it was);
    "output_code": Inductor output-code entries the report lists (0 when not made)}."""
    logs = sorted(trace_dir.glob("*.log"))
    for log in logs:
        log.chmod(0o644)  # torch makes it 0600; the run folder is for everyone who reads it
    program = tlparse_program()
    if not logs:
        return not_made(_("torch wrote no structured trace in this run"))
    if program is None:
        return not_made(
            _(
                "tlparse is not installed here (pip install {pin}); the raw trace is in {dir}/"
            ).format(pin=TLPARSE_PIN, dir=TRACE_DIR)
        )
    done = subprocess.run(
        [program, str(logs[-1]), "-o", str(out_dir), "--no-browser", "--overwrite"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    index = out_dir / "index.html"
    if done.returncode != 0 or not index.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return not_made(_("tlparse failed: {line}").format(line=last))
    shutil.rmtree(trace_dir)
    directory = out_dir / "compile_directory.json"  # every compile of the trace, with its artifacts
    compiles = json.loads(directory.read_text()) if directory.is_file() else {}
    return {
        "index": index,
        "reason": "",
        # Inductor output-code artifacts the report lists, over all compiles
        "output_code": sum(
            a["name"].startswith("inductor_output_code")
            for entry in compiles.values()
            for a in entry.get("artifacts", [])
        ),
    }


def not_made(reason: str) -> dict:
    return {"index": None, "reason": reason, "output_code": 0}


def tlparse_report(ctx: LabContext, captures: dict) -> dict:
    """tlparse's HTML report of this run's trace. Where tlparse is installed the report must be made and hold
    the Inductor code of every module this lab captured (a trace started late, or lost, holds fewer).
    captures: stage -> what its compile produced (capture.compile_and_capture's)."""
    send_torch_trace(None)
    report = make_report(ctx.path(TRACE_DIR), ctx.path(REPORT_DIR))
    if tlparse_program() is not None:
        ctx.check_equal(
            _("tlparse report: Inductor output-code entries = code modules this lab captured"),
            report["output_code"],
            sum(len(cap["code"]) for cap in captures.values()),
        )
    return report
