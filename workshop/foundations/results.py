"""The run folder: results/<run-id>/ with manifest.json, one sub-folder per lab, and results/latest.

A run id is a UTC timestamp plus random hex, and its folder is created with mkdir (never exist_ok), so a new
run can never write into an old one. Every file goes through foundations.atomic. The run's options are in its
options.json (foundations.run_options), written with its manifest (new_run), which `run --resume` reads.

The manifest says where the run stands ("status"): "running" (with the pid and host of the process that runs
it), then "finished" or "interrupted". It is rewritten after every lab, so the labs that finished stay recorded
whatever happens next. results/latest moves to a run of the reference only when it finishes; a finished run of a
learner's workspace (`check`, `grade`) moves results/latest-check instead. A run still "running" whose process is
gone was killed (SIGKILL, a power cut): `run_state` calls it "abandoned". An incomplete run is noted once (its
manifest's "noted": cli.runs.note_incomplete_runs), until it is stopped again.

A run folder holds a small reserve file, deleted when a write of the run's own records (the manifest, a
result.json) finds the disk full: those records are written even then, and the run stops with a clear message.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from workshop.foundations import atomic, proctree
from workshop.foundations.device import device_facts
from workshop.foundations.run_options import RunOptions
from workshop.i18n import _

DEFAULT_ROOT = Path("results")
LATEST = "latest"  # the newest finished run of the reference (`run`)
LATEST_CHECK = "latest-check"  # the newest finished run of a learner's workspace (`check`, `grade`)
RESERVE = ".space-reserve"
# room for the run's records (manifest, result.json, summary.md) on a full disk
RESERVE_BYTES = 1 << 20
# A run refuses to start with less free space: a full CPU run writes about 6 MB (the compile lab's code dumps
# and every lab's pictures); 50 MB leaves room for larger traces.
MIN_FREE_BYTES = 50 << 20
FULL_DISK = (errno.ENOSPC, errno.EDQUOT)


class RunFolderError(RuntimeError):
    """The results folder cannot hold a run; the message names the path, the reason and the fix."""


class CorruptFile(ValueError):
    """A run's file cannot be read as what it should be; the message names the file and the fix."""


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def git_revision() -> str:
    """WORKSHOP_GIT_REVISION where it is set (a copy of the code whose `.git`, if it has one, need not be the
    copied tree's: the GPU hosts' copy carried an older commit's), else HEAD's hash, '+dirty' when the tree has
    changes, 'unknown' outside a git checkout."""
    given = os.environ.get("WORKSHOP_GIT_REVISION", "unknown")
    if given != "unknown":
        return given
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=10,
            check=True,  # outside a git checkout: CalledProcessError, "unknown"
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], cwd=here, capture_output=True, text=True, timeout=10
        )
        return rev.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def new_run(root: Path, command: list[str], options: RunOptions, **details) -> Path:
    """Create results/<run-id>/ with its manifest (status "running"), its options.json (what `run --resume`
    reads back) and its reserve, or leave nothing.

    `details` (the planned labs, the checkpoint, what ran: "implementation", the reference unless it says a
    learner's workspace: where, whose, its files' hashes) go into the manifest as they are."""
    if root.exists() and not root.is_dir():
        raise RunFolderError(
            _(
                "cannot write results under {root}: it is a file, not a folder; "
                "pass --out with a folder (it is created if missing)"
            ).format(root=root)
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(root).free
    except OSError as e:
        raise RunFolderError(unusable(root, e)) from None
    if free < MIN_FREE_BYTES:
        raise RunFolderError(
            _(
                "cannot write results under {root}: only {free:.1f} MB free, a run needs {need} MB "
                "(free some space or pass --out with a folder on another disk)"
            ).format(root=root, free=free / 1e6, need=MIN_FREE_BYTES >> 20)
        )
    run_dir = root / (time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3))
    try:
        run_dir.mkdir()  # never exist_ok: a new run never writes into an old one
    except FileExistsError:
        raise
    except OSError as e:
        raise RunFolderError(unusable(root, e)) from None
    manifest = {
        "run_id": run_dir.name,
        "command": command,
        "start_time": _now(),
        "end_time": None,
        "status": "running",
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "git_revision": git_revision(),
        "seeds": {"workshop": options.seed},
        "n_procs": options.n_procs,  # --n: processes of the distributed demos
        "time_limit_s": options.time_limit_s,
        "lang": options.lang,
        "implementation": {"kind": "reference"},
        **device_facts(options.device),
        **details,
        "labs": {},
    }
    try:
        atomic.write_json(run_dir / "manifest.json", manifest)
        options.write(run_dir)
        atomic.write_bytes(run_dir / RESERVE, bytes(RESERVE_BYTES))
    except OSError as e:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise RunFolderError(unusable(root, e)) from None
    return run_dir


def unusable(root: Path, error: OSError) -> str:
    """One line: why `root` cannot hold a run, and the fix."""
    denied = _("permission denied; pass --out with a folder you may write, or fix its owner")
    fixes = {
        errno.EROFS: _(
            "it is on a read-only file system; pass --out with a folder on a writable disk"
        ),
        errno.EACCES: denied,
        errno.EPERM: denied,
        errno.ENOSPC: _(
            "the disk is full; free some space or pass --out with a folder on another disk"
        ),
        errno.EDQUOT: _(
            "your disk quota is used up; free some space or pass --out on another disk"
        ),
        errno.ENOTDIR: _("a part of the path is a file, not a folder; pass --out with a folder"),
        errno.EEXIST: _("a file is in the way; pass --out with a folder"),
        errno.ENOENT: _("it cannot be created there; pass --out with a folder on a normal disk"),
    }
    fix = fixes.get(error.errno, _("pass --out with another folder"))
    return _("cannot write results under {root}: {reason} ({fix})").format(
        root=root, reason=error.strerror or error, fix=fix
    )


def update_manifest(run_dir: Path, labs_ended: dict | None = None, **changes) -> dict:
    """Rewrite the manifest with `changes`, and the labs that ended (lab -> its status: passed, duration_s,
    returncode, stopped) beside those it has (a run's record: written even on a full disk, write_record)."""
    manifest = read_json(run_dir / "manifest.json") | changes
    manifest["labs"].update(labs_ended or {})
    write_record(run_dir, lambda: atomic.write_json(run_dir / "manifest.json", manifest))
    return manifest


def write_record(run_dir: Path, write):
    """Call write(); if the disk is full, give up the run's reserve and call it again."""
    try:
        return write()
    except OSError as e:
        reserve = run_dir / RESERVE
        if e.errno not in FULL_DISK or not reserve.exists():
            raise
        reserve.unlink()
        return write()


def disk_full(run_dir: Path) -> bool:
    """True once the run's reserve was used, or when there is less free space than a run needs to go on."""
    return not (run_dir / RESERVE).exists() or shutil.disk_usage(run_dir).free < RESERVE_BYTES


def end_run(
    run_dir: Path, why: str | None = None, lab: str | None = None, labs_ended: dict | None = None
) -> None:
    """Mark the run finished and point results/latest (a workspace's run: results/latest-check) at it; or, given
    `why` (a signal, a full disk), mark it interrupted during `lab`, with the labs that ended (update_manifest's),
    and results/latest stays."""
    manifest = update_manifest(
        run_dir,
        labs_ended,
        end_time=_now(),
        **(
            {"status": "finished"}
            if why is None
            else {"status": "interrupted", "stopped": {"why": why, "lab": lab}, "noted": False}
        ),
    )
    (run_dir / RESERVE).unlink(missing_ok=True)
    if why is None:
        link = run_dir.parent / f".{latest_name(manifest)}.{secrets.token_hex(4)}"
        os.symlink(run_dir.name, link)
        os.replace(link, run_dir.parent / latest_name(manifest))


def latest_name(manifest: dict) -> str:
    """The pointer a finished run moves: a learner's workspace's runs never move the reference's latest."""
    implementation = manifest.get("implementation") or {}
    return LATEST_CHECK if implementation.get("kind") == "workspace" else LATEST


def resume_run(run_dir: Path) -> list[str]:
    """Make an interrupted run "running" again; returns its labs still to run, in order.

    A lab that was stopped keeps what it wrote: its folder moves aside to <lab>.stopped-<k> (nothing is lost)
    and the lab runs again from the start."""
    manifest = read_manifest(run_dir)
    labs = {lab: s for lab, s in manifest["labs"].items() if not s.get("stopped")}
    todo = [lab for lab in manifest.get("labs_planned", []) if lab not in labs]
    for lab in todo:
        if (run_dir / lab).exists():
            k = 1 + sum(1 for _ in run_dir.glob(f"{lab}.stopped-*"))
            (run_dir / lab).rename(run_dir / f"{lab}.stopped-{k}")
    resumed = manifest.get("resumed", []) + [
        {"time": _now(), "git_revision": git_revision(), "after": run_state(manifest).detail}
    ]
    update_manifest(
        run_dir,
        labs=labs,
        status="running",
        pid=os.getpid(),
        host=socket.gethostname(),
        end_time=None,
        stopped=None,
        resumed=resumed,
        noted=False,
    )
    write_record(run_dir, lambda: atomic.write_bytes(run_dir / RESERVE, bytes(RESERVE_BYTES)))
    return todo


def read_json(path: Path):
    return json.loads(Path(path).read_text(encoding="utf-8"))


@dataclass
class RunState:
    status: str  # finished | interrupted | running | abandoned
    detail: str  # one line for the learner


def run_state(manifest: dict) -> RunState:
    # a manifest written before runs had a status: finished when it has an end time
    status = manifest.get("status") or ("finished" if manifest.get("end_time") else "running")
    done = [lab for lab, s in manifest.get("labs", {}).items() if not s.get("stopped")]
    planned = manifest.get("labs_planned") or list(manifest.get("labs", {}))
    todo = [lab for lab in planned if lab not in done]
    labs = _("finished labs: {done}; not finished: {todo}").format(
        done=", ".join(done) or "-", todo=", ".join(todo) or "-"
    )
    if status == "finished":
        return RunState("finished", _("finished"))
    if status == "interrupted":
        stopped = manifest.get("stopped") or {}
        why = stopped.get("why", _("interrupted"))
        if stopped.get("lab"):
            why = _("{why} during lab {lab}").format(why=why, lab=stopped["lab"])
        return RunState("interrupted", f"{why} ({labs})")
    # on another machine or container it cannot be running here
    here = manifest.get("host") == socket.gethostname() and "pid" in manifest
    if here and proctree.alive(manifest["pid"]):
        return RunState("running", _("still running (pid {pid})").format(pid=manifest["pid"]))
    return RunState(
        "abandoned",
        _("its process (pid {pid}) is gone: it was killed").format(pid=manifest.get("pid", "?"))
        + f" ({labs})",
    )


def read_manifest(run_dir: Path) -> dict:
    path = Path(run_dir) / "manifest.json"
    keys = ("run_id", "command", "start_time", "device", "labs")
    return _read_record(
        path,
        keys,
        _("the run's record is lost: run its labs again"),
        lambda manifest: isinstance(manifest["labs"], dict),
        _("{path} is corrupt: its 'labs' is not a mapping ({fix})"),
    )


def read_result(lab_dir: Path) -> dict:
    path = Path(lab_dir) / "result.json"
    fix = _("run the lab again: {command}").format(
        command=f"python -m workshop run {path.parent.name}"
    )
    return _read_record(
        path,
        ("lab", "passed", "checks"),
        fix,
        lambda result: (
            isinstance(result["checks"], list)
            and all(isinstance(c, dict) and "passed" in c for c in result["checks"])
        ),
        _("{path} is corrupt: 'checks' is not a list of checks ({fix})"),
    )


def _read_record(path: Path, keys: tuple[str, ...], fix: str, sound, unsound: str) -> dict:
    """The JSON record at `path`, with `keys`, and sound(record) (else CorruptFile: the `unsound` message)."""
    try:
        record = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise CorruptFile(_("{path} is missing ({fix})").format(path=path, fix=fix)) from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CorruptFile(
            _("{path} is corrupt: {error} ({fix})").format(path=path, error=e, fix=fix)
        ) from None
    missing = [k for k in keys if not isinstance(record, dict) or k not in record]
    if missing:
        raise CorruptFile(
            _("{path} is corrupt: it has no {keys} ({fix})").format(
                path=path, keys=", ".join(missing), fix=fix
            )
        )
    if not sound(record):
        raise CorruptFile(unsound.format(path=path, fix=fix))
    return record


def resolve_run(spec: str | None, root: Path = DEFAULT_ROOT) -> Path:
    """A run folder from a path, a run id under root, or None for results/latest."""
    candidates = [Path(spec), root / spec] if spec else [root / "latest"]
    for c in candidates:
        if (c / "manifest.json").is_file():
            return c.resolve()
    where = spec or f"{root}/latest"
    raise FileNotFoundError(
        _("no run found at {where}; start one with `python -m workshop run`").format(where=where)
    )


def runs(root: Path = DEFAULT_ROOT) -> list[Path]:
    """The run folders under root, newest first (a run id starts with its UTC start time)."""
    if not Path(root).is_dir():
        return []
    found = [
        p for p in Path(root).iterdir() if not p.is_symlink() and (p / "manifest.json").is_file()
    ]
    return sorted(found, key=lambda p: p.name, reverse=True)
