"""The run folder: results/<run-id>/ with manifest.json, one sub-folder per lab, and results/latest.

A run id is a UTC timestamp plus random hex, and its folder is created with mkdir (never exist_ok), so a new
run can never write into an old one. Every file goes through workshop.atomic.
"""

from __future__ import annotations

import os
import platform
import secrets
import subprocess
import sys
import time
from pathlib import Path

from workshop import atomic

DEFAULT_ROOT = Path("results")


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_revision() -> str:
    """HEAD's hash, '+dirty' when the tree has changes, 'unknown' outside a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=10
        )
        if rev.returncode != 0:
            return os.environ.get("WORKSHOP_GIT_REVISION", "unknown")
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=here, capture_output=True, text=True, timeout=10
        )
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("WORKSHOP_GIT_REVISION", "unknown")


def environment(device: str) -> dict:
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda,
        "device": device,
        "device_name": torch.cuda.get_device_name(0)
        if device == "cuda"
        else platform.processor() or "cpu",
        "gpu_count": torch.cuda.device_count() if device == "cuda" else 0,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
    }


def new_run(
    root: Path,
    command: list[str],
    device: str,
    seeds: dict,
    n_procs: int = 2,
    implementation: dict | None = None,
) -> Path:
    """Create results/<run-id>/ and its manifest; point results/latest at it. `implementation` says what ran:
    the reference ({"kind": "reference"}) or a learner's workspace (where, whose, its files' hashes)."""
    root.mkdir(parents=True, exist_ok=True)
    run_id = time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)
    run_dir = root / run_id
    run_dir.mkdir()  # raises FileExistsError rather than overwrite
    manifest = {
        "run_id": run_id,
        "command": command,
        "start_time": _now(),
        "end_time": None,
        "git_revision": git_revision(),
        "seeds": seeds,
        "n_procs": n_procs,  # --n: processes of the distributed demos
        "implementation": implementation or {"kind": "reference"},
        **environment(device),
        "labs": {},
    }
    atomic.write_json(run_dir / "manifest.json", manifest)
    point_latest(root, run_id)
    return run_dir


def point_latest(root: Path, run_id: str) -> None:
    tmp = root / f".latest.{secrets.token_hex(4)}"
    os.symlink(run_id, tmp)
    os.replace(tmp, root / "latest")


def finish_run(run_dir: Path, lab_status: dict[str, dict]) -> None:
    manifest = read_json(run_dir / "manifest.json")
    manifest["labs"] = lab_status
    manifest["end_time"] = _now()
    atomic.write_json(run_dir / "manifest.json", manifest)


def read_json(path: Path):
    import json

    return json.loads(Path(path).read_text())


def resolve_run(spec: str | None, root: Path = DEFAULT_ROOT) -> Path:
    """A run folder from a path, a run id under root, or None for results/latest."""
    candidates = [Path(spec), root / spec] if spec else [root / "latest"]
    for c in candidates:
        if (c / "manifest.json").is_file():
            return c.resolve()
    where = spec or f"{root}/latest"
    raise FileNotFoundError(f"no run found at {where}; start one with `python -m workshop run`")


def runs(root: Path = DEFAULT_ROOT) -> list[Path]:
    """The run folders under root, newest first (a run id starts with its UTC start time)."""
    if not Path(root).is_dir():
        return []
    found = [
        p for p in Path(root).iterdir() if not p.is_symlink() and (p / "manifest.json").is_file()
    ]
    return sorted(found, key=lambda p: p.name, reverse=True)


def newest_lab_dir(root: Path, lab: str) -> Path | None:
    """The newest run's folder of `lab` that holds a result.json, or None."""
    return next((r / lab for r in runs(root) if (r / lab / "result.json").is_file()), None)


def python_command() -> list[str]:
    return [sys.executable, "-m", "workshop", *sys.argv[1:]]
