"""The fault suite: a clumsy user's interrupts, bad paths, broken files and bad arguments.

In-process where nothing needs a lab (refusals, corrupt files, resume); a real `python -m workshop run` of the
quickest labs where a signal, a time limit or a full disk must meet a running lab (marked slow). Each run uses
its own TMPDIR and results folder under tmp_path, so "no process outlives the run" and "no temporary folder is
left" are checked on exactly what that run started.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from rich.console import Console

from tests.support import lab_process
from workshop.cli import runs
from workshop.cli.main import main
from workshop.foundations import interrupt, proctree, results
from workshop.foundations.run_options import RunOptions
from workshop.harness import child, runner
from workshop.lab_api import Check

# ---------------------------------------------------------------- helpers


def refusal(*args: str) -> str:
    """The one-line message with which `python -m workshop ARGS` refuses (in-process)."""
    with pytest.raises(SystemExit) as e:
        main(list(args))
    message = str(e.value.code)
    assert message.startswith("error: ") and "\n" not in message, message
    return message


def leftovers(tmp_path: Path) -> list[str]:
    """Command lines of live processes that name this test's folder (the run, its lab, torchrun, ranks)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if str(tmp_path) in cmdline and state != "Z":
            found.append(cmdline)
    return found


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def start_run(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """`python -m workshop run ARGS` on the CPU in a session of its own, as a terminal starts a foreground job:
    signalling its process group is what Ctrl-C does."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environ |= {"TMPDIR": str(tmp_path / "tmp"), **(env or {})}
    out = ["--out", str(tmp_path / "results")] if "--out" not in args else []
    return subprocess.Popen(
        [sys.executable, "-m", "workshop", "run", *args, "--device", "cpu", *out],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=environ,
        start_new_session=True,
    )


def the_run(root: Path) -> Path:
    (run_dir,) = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink()]
    return run_dir


def lab_started(tmp_path: Path, lab: str, text: str = "] ok "):
    """True once the lab's log shows `text` (by default: its first passed check)."""

    def started() -> bool:
        logs = list((tmp_path / "results").glob(f"*/{lab}/log.txt"))
        return bool(logs) and text in logs[0].read_text(errors="replace")

    return started


def assert_nothing_left(tmp_path: Path) -> None:
    wait_for(lambda: not leftovers(tmp_path), 10, "the run's processes to exit")
    assert not list((tmp_path / "tmp").iterdir()), "a temporary folder was left behind"


def stopped_checks(lab_dir: Path) -> list[dict]:
    checks = results.read_result(lab_dir)["checks"]
    return [c for c in checks if c["name"] == "lab ran to completion" and not c["passed"]]


# ---------------------------------------------------------------- signals (slow: they meet a running lab)


@pytest.mark.slow
def test_ctrl_c_during_a_lab_stops_it_keeps_its_checks_and_marks_the_run_incomplete(tmp_path):
    proc = start_run(tmp_path, "minigpt", "autograd")
    wait_for(lab_started(tmp_path, "minigpt"), 120, "the minigpt lab's first check")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    start = time.monotonic()
    output = proc.communicate(timeout=30)[0].decode()
    assert proc.returncode == 130 and time.monotonic() - start < 10
    assert "Traceback" not in output
    run_dir = the_run(tmp_path / "results")
    assert "is incomplete: interrupted (SIGINT, Ctrl-C) during lab minigpt" in output
    # the parent passes the user's signal on: the lab says SIGINT too, never the SIGTERM it once got
    assert "SIGTERM" not in output, output
    assert f"--resume {run_dir.name}" in output
    manifest = results.read_manifest(run_dir)
    assert manifest["status"] == "interrupted" and manifest["stopped"]["lab"] == "minigpt"
    assert manifest["labs"]["minigpt"]["stopped"].startswith("interrupted (SIGINT")
    checks = results.read_result(run_dir / "minigpt")["checks"]
    assert checks[0]["passed"], "the checks that ran before the interrupt are kept"
    assert [c["value"] for c in stopped_checks(run_dir / "minigpt")] == [
        "interrupted (SIGINT, Ctrl-C)"
    ]
    assert not (run_dir / "autograd").exists()
    assert not (tmp_path / "results" / "latest").exists(), "latest moves only to a finished run"
    assert_nothing_left(tmp_path)
    assert main(["report", str(run_dir)]) == 1
    assert "incomplete" in (run_dir / "REPORT.md").read_text().splitlines()[2]


@pytest.mark.slow
@pytest.mark.distributed
def test_sigterm_during_torchrun_stops_torchrun_and_every_rank(tmp_path):
    proc = start_run(tmp_path, "distributed", "--n", "2")

    def ranks() -> list[str]:
        return [
            c for c in leftovers(tmp_path) if "workshop.labs.distributed.ddp" in c and "-u" in c
        ]

    wait_for(lambda: len(ranks()) == 2, 120, "torchrun's two DDP ranks")
    os.killpg(proc.pid, signal.SIGTERM)
    start = time.monotonic()
    proc.communicate(timeout=30)
    assert proc.returncode == 143 and time.monotonic() - start < 10
    assert_nothing_left(tmp_path)  # torchrun's torchelastic_* folder included
    manifest = results.read_manifest(the_run(tmp_path / "results"))
    assert (
        manifest["status"] == "interrupted" and manifest["stopped"]["why"] == "stopped by SIGTERM"
    )


@pytest.mark.slow
def test_sigkill_of_the_run_takes_its_lab_down_and_the_next_commands_say_so(tmp_path, monkeypatch):
    proc = start_run(tmp_path, "minigpt")
    wait_for(lab_started(tmp_path, "minigpt"), 120, "the minigpt lab's first check")
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    wait_for(lambda: not leftovers(tmp_path), 10, "the orphaned lab to die with its parent")
    run_dir = the_run(tmp_path / "results")
    assert stopped_checks(run_dir / "minigpt"), "the lab recorded why it stopped"
    state = results.run_state(results.read_manifest(run_dir))
    assert state.status == "abandoned" and "is gone" in state.detail
    screen = Console(file=io.StringIO(), width=400, force_terminal=False)
    monkeypatch.setattr(runs, "console", screen)
    runs.note_incomplete_runs(tmp_path / "results")
    assert f"{state.detail}; resume it: python -m workshop run --resume {run_dir.name}" in (
        screen.file.getvalue()
    )
    assert main(["report", str(run_dir)]) == 1
    # The killed run could not remove its cache folder: the next run does.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    assert len(runner.sweep_stale_caches()) == 1
    assert not list((tmp_path / "tmp").iterdir())


@pytest.mark.slow
def test_time_limit_fails_the_lab_and_the_run_goes_on_on_an_ascii_terminal(tmp_path):
    """Two cases in one run, to pay for the labs' start-up once: the table prints on an ASCII-only stdout."""
    ascii_only = {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    proc = start_run(tmp_path, "minigpt", "autograd", "--time-limit", "1", env=ascii_only)
    output = proc.communicate(timeout=120)[0].decode("ascii")  # not one byte outside ASCII
    traceback = output.find("Traceback")
    assert proc.returncode == 1 and traceback < 0, output[
        max(0, traceback - 1500) : traceback + 3000
    ]
    run_dir = (tmp_path / "results" / "latest").resolve()
    for lab in ("minigpt", "autograd"):
        assert [c["value"] for c in stopped_checks(run_dir / lab)] == [
            "ran out of time (limit 1 s)"
        ]
    assert results.read_manifest(run_dir)["status"] == "finished"
    # each lab's failing checks are on the screen, and fit 80 columns with every line that has no path (a line
    # with one, such as the run folder's, is never wrapped: a path stays copyable)
    assert output.count("ran out of time (limit 1 s)") == 2
    assert max(len(line) for line in output.splitlines() if str(tmp_path) not in line) <= 80
    assert_nothing_left(tmp_path)


@pytest.mark.slow
def test_a_lab_stuck_outside_python_is_killed_at_its_time_limit(tmp_path, monkeypatch):
    """The lab's own alarm cannot act in a process that does not run (stopped, or stuck in C): the parent's
    backstop kills its tree and writes its result."""
    monkeypatch.setattr(runner, "BACKSTOP_S", 0.5)
    monkeypatch.setattr(proctree, "GRACE_S", 1.0)
    run_dir = results.new_run(tmp_path / "results", [], RunOptions("cpu"))

    def freeze_the_lab():
        wait_for(lambda: leftovers(tmp_path), 30, "the lab's process")
        for pid in proctree._tree({os.getpid()}) - {os.getpid()}:
            if str(tmp_path) in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                os.kill(pid, signal.SIGSTOP)

    threading.Thread(target=freeze_the_lab, daemon=True).start()
    options = RunOptions("cpu", time_limit_s=2.0)
    start = time.monotonic()
    status, _result = runner.run_lab(run_dir, "minigpt", options)
    assert time.monotonic() - start < 10 and status["passed"] is False
    assert [c["value"] for c in stopped_checks(run_dir / "minigpt")] == [
        "ran out of time (limit 2 s)"
    ]
    assert not leftovers(tmp_path)


# ---------------------------------------------------------------- disks and paths


def mount_tmpfs(where: Path, *options: str) -> None:
    where.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)],
            capture_output=True,
        )
    except FileNotFoundError:
        pytest.skip("no mount command here")
    if (
        done.returncode != 0
    ):  # not root, or no CAP_SYS_ADMIN (a container): CI's native half runs it
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")


@pytest.fixture
def small_disk(tmp_path):
    mounts = []

    def make(name: str, *options: str) -> Path:
        mount_tmpfs(tmp_path / name, *options)
        mounts.append(tmp_path / name)
        return tmp_path / name

    yield make
    for where in mounts:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.parametrize(
    "make_out, reason",
    [
        (lambda tmp, disk: tmp / "a_file", "it is a file, not a folder"),
        (lambda tmp, disk: tmp / "a_file" / "results", "a part of the path is a file"),
        (lambda tmp, disk: Path("/proc/workshop-results"), "cannot write results under /proc"),
        (lambda tmp, disk: disk("ro", "size=1m", "ro") / "results", "read-only file system"),
        (lambda tmp, disk: disk("tiny", "size=8m"), "only 8.4 MB free, a run needs 50 MB"),
    ],
    ids=["a file", "under a file", "under /proc", "read-only", "full"],
)
def test_an_unusable_out_is_one_line_and_leaves_no_run_folder(
    tmp_path, small_disk, make_out, reason
):
    (tmp_path / "a_file").write_text("not a folder")
    out = make_out(tmp_path, small_disk)
    message = refusal("run", "minigpt", "--device", "cpu", "--out", str(out))
    assert str(out) in message and reason in message and "--out" in message
    assert not (out.is_dir() and any(out.iterdir())), "no half-made run folder"


@pytest.mark.slow
def test_a_full_disk_mid_lab_fails_that_lab_and_keeps_what_was_written(tmp_path, small_disk):
    """The disk fills as the autograd lab starts (the quickest lab, ~3 s): its first file cannot be written."""
    disk = small_disk("disk", "size=60m")
    proc = start_run(tmp_path, "autograd", "dispatcher", "--out", str(disk / "results"))
    wait_for(lambda: list(disk.glob("results/*/autograd/log.txt")), 120, "the autograd lab")
    with pytest.raises(OSError), open(disk / "filler", "wb") as f:  # fill the disk to the last byte
        while True:
            f.write(bytes(1 << 20))
            f.flush()
    output = proc.communicate(timeout=300)[0].decode()
    assert proc.returncode == 1 and "the disk is full" in output, output[-2000:]
    run_dir = the_run(disk / "results")
    manifest = results.read_manifest(run_dir)
    assert manifest["status"] == "interrupted" and "is full" in manifest["stopped"]["why"]
    assert manifest["labs"]["autograd"]["passed"] is False, "the lab is recorded, and failed"
    assert stopped_checks(run_dir / "autograd") and not (run_dir / "dispatcher").exists()
    assert f"--resume {run_dir.name}" in output
    assert not leftovers(tmp_path)


# ---------------------------------------------------------------- bad arguments, refused before anything starts


@pytest.mark.parametrize(
    "args, words",
    [
        (["distributed", "--n", "1000"], "asks for 1000 CPU processes, but this machine holds"),
        (["minigpt", "--time-limit", "0"], "--time-limit must be a positive number"),
        (["minigpt", "--checkpoint", "nothing.pt"], "no checkpoint at nothing.pt"),
        (["minigpt", "--resume", "x"], "--resume runs the labs its run did not finish"),
        (["--resume", "nosuchrun"], "no run found at nosuchrun"),
    ],
    ids=["n over the machine", "time limit", "checkpoint", "resume with labs", "resume nothing"],
)
def test_bad_run_arguments_are_refused_before_a_run_folder_exists(tmp_path, args, words):
    message = refusal("run", *args, "--device", "cpu", "--out", str(tmp_path / "results"))
    assert words in message
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_a_broken_checkpoint_is_refused_naming_it_and_the_fix(tmp_path):
    (tmp_path / "mine.pt").write_bytes(b"")
    message = refusal(
        "run", "minigpt", "--device", "cpu", "--checkpoint", str(tmp_path / "mine.pt")
    )
    assert "mine.pt: the file is empty" in message and "python -m workshop train" in message


@pytest.mark.parametrize(
    "args, words",
    [
        (["--steps", "0"], "--steps must be at least 1 (got 0)"),
        (["--steps", "-5"], "--steps must be at least 1 (got -5)"),
        (["--force"], "is a folder; pass --out with a file path"),
    ],
)
def test_train_checks_its_arguments_and_output_before_training(tmp_path, args, words):
    out = tmp_path if "--force" in args else tmp_path / "my.pt"
    start = time.monotonic()
    assert words in refusal("train", "--out", str(out), *args)
    assert time.monotonic() - start < 5 and not (tmp_path / "my.pt").exists()


# ---------------------------------------------------------------- report on damaged runs


@pytest.fixture
def finished_run(tmp_path) -> Path:
    run_dir = results.new_run(tmp_path, ["python"], RunOptions("cpu"), labs_planned=["minigpt"])
    (run_dir / "minigpt").mkdir()
    child.write_result(run_dir / "minigpt", "minigpt", "cpu", [Check("c", True, 1, 1)], 1.0, "ok")
    results.update_manifest(run_dir, {"minigpt": {"passed": True, "duration_s": 1.0}})
    results.end_run(run_dir)
    return run_dir


def test_report_on_a_sound_run_exits_0(finished_run):
    assert main(["report", str(finished_run)]) == 0


@pytest.mark.parametrize(
    "damage, words",
    [
        (
            lambda run: (run / "minigpt" / "result.json").write_text('{"lab": "mini'),
            "result.json is corrupt",
        ),
        (lambda run: (run / "minigpt" / "result.json").unlink(), "result.json is missing"),
        (
            lambda run: (run / "minigpt" / "summary.md").write_bytes(b"\xff\xfe\x00"),
            "is not UTF-8 text",
        ),
    ],
    ids=["corrupt result", "missing result", "binary summary"],
)
def test_report_names_a_damaged_lab_file_and_exits_nonzero(finished_run, capsys, damage, words):
    damage(finished_run)
    assert main(["report", str(finished_run)]) == 1
    out = capsys.readouterr().out
    assert words in out and "minigpt" in out


@pytest.mark.parametrize(
    "manifest, words",
    [
        ('{"run_id": "x", "comm', "manifest.json is corrupt"),
        ('{"run_id": "x"}', "it has no command"),
    ],
    ids=["truncated", "keys missing"],
)
def test_report_refuses_a_damaged_manifest_in_one_line(finished_run, manifest, words):
    (finished_run / "manifest.json").write_text(manifest)
    assert words in refusal("report", str(finished_run))


# ---------------------------------------------------------------- resume


def test_resume_runs_what_did_not_finish_and_keeps_the_stopped_lab_aside(tmp_path, monkeypatch):
    # its options.json: what --resume runs with
    options = RunOptions("cpu", n_procs=2, seed=3)
    run_dir = results.new_run(tmp_path, ["python"], options, labs_planned=["minigpt", "autograd"])
    results.update_manifest(run_dir, {"minigpt": {"passed": True, "duration_s": 1.0}})
    (run_dir / "autograd").mkdir()
    (run_dir / "autograd" / "log.txt").write_text("half a lab")
    results.update_manifest(run_dir, {"autograd": {"passed": False, "stopped": "interrupted"}})
    results.end_run(run_dir, "interrupted (SIGINT, Ctrl-C)", "autograd")
    ran = []

    def fake_lab(run_dir, name, options, on_line=None):
        ran.append((name, options.seed))
        (run_dir / name).mkdir()
        result = child.write_result(run_dir / name, name, "cpu", [Check("c", True, 1, 1)], 1.0, "")
        results.update_manifest(run_dir, {name: {"passed": True, "duration_s": 1.0}})
        return {"passed": True, "duration_s": 1.0}, result  # as run_lab returns them

    monkeypatch.setattr(runner, "run_lab", fake_lab)
    assert main(["run", "--resume", run_dir.name, "--out", str(tmp_path)]) == 0
    assert ran == [("autograd", 3)], "only the unfinished lab, with the run's own options"
    assert (run_dir / "autograd.stopped-1" / "log.txt").read_text() == "half a lab"
    manifest = results.read_manifest(run_dir)
    assert manifest["status"] == "finished" and manifest["resumed"][0]["after"].startswith(
        "interrupted"
    )
    assert (tmp_path / "latest").resolve() == run_dir.resolve()
    assert "nothing to resume" in refusal("run", "--resume", run_dir.name, "--out", str(tmp_path))


# ---------------------------------------------------------------- the mechanisms


def test_stop_tree_reaches_a_grandchild_in_a_session_of_its_own(tmp_path):
    """As torchrun's ranks are: each in its own session, so killpg on the group would miss it."""
    sleep = f"{sys.executable} -c 'import time; time.sleep(300)' {tmp_path}"
    proc = subprocess.Popen(["sh", "-c", f"setsid {sleep} & {sleep}; :"])
    wait_for(lambda: len(leftovers(tmp_path)) == 3, 10, "the tree")
    proctree.stop_tree(proc.pid, grace_s=2)
    proc.wait(timeout=5)
    assert not leftovers(tmp_path)


def test_a_sigint_ignored_by_the_caller_stays_ignored():
    """A shell starts a background job with SIGINT ignored: Ctrl-C must not reach it (docker/session.sh)."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt.raising_on_signals():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGINT, previous)


def test_a_manifest_without_status_reads_as_before(tmp_path):
    """Runs written before the status field: finished when they have an end time."""
    assert results.run_state({"end_time": "2026-11-30T10:00:00Z", "labs": {}}).status == "finished"
    assert results.run_state({"end_time": None, "labs": {}}).status == "abandoned"


def test_unusable_names_permission_problems(tmp_path):
    message = results.unusable(tmp_path, PermissionError(13, "Permission denied"))
    assert "Permission denied" in message and "--out" in message


def test_the_failing_checks_fit_80_columns(finished_run):
    from rich.console import Console

    long = Check(
        "a check whose name is longer than any column could hold " * 2, False, "v" * 200, 1e-7
    )
    child.write_result(finished_run / "minigpt", "minigpt", "cpu", [long], 1.0, "")
    console = Console(width=80, record=True, file=io.StringIO())
    console.print(runs.failing_checks(results.read_result(finished_run / "minigpt")["checks"]))
    assert max(len(line) for line in console.export_text().splitlines()) <= 80
    assert (
        json.loads((finished_run / "minigpt" / "result.json").read_text())["checks"][0]["value"]
        == "v" * 200
    )


# ---------------------------------------------------------------- --checkpoint: the learner's own MiniGPT


def test_checkpoint_reaches_the_lab_its_processes_and_the_manifest(tmp_path, monkeypatch):
    import torch

    from workshop.labs import minigpt
    from workshop.minigpt import checkpoint

    mine = tmp_path / "mine.pt"
    torch.save(checkpoint.load().state_dict(), mine)  # a learner's plain state dict
    seen = {}

    def lab(ctx):
        seen.update(ctx=ctx.options.checkpoint, env=checkpoint.from_environment())
        ctx.check_equal("ran", 1, 1)

    monkeypatch.setenv(checkpoint.ENVIRONMENT, "")  # restored after the test: main sets it
    monkeypatch.setattr(minigpt, "LAB", dataclasses.replace(minigpt.LAB, entry=lab))
    assert lab_process.run_here("minigpt", tmp_path, checkpoint=mine) == 0
    assert seen == {"ctx": mine, "env": mine.resolve()}  # env: torchrun's ranks read it there

    options = RunOptions("cpu", checkpoint=mine, time_limit_s=5.0)
    options.write(tmp_path)
    assert RunOptions.read(tmp_path) == options  # the lab's process reads them there

    monkeypatch.setattr(
        runs, "execute", lambda *a: 0
    )  # the run's folder and manifest are made before
    root = tmp_path / "results"
    main(["run", "minigpt", "--device", "cpu", "--checkpoint", str(mine), "--out", str(root)])
    recorded = results.read_manifest(the_run(root))["checkpoint"]
    assert recorded["path"].endswith("mine.pt")
    assert recorded["sha256"] == hashlib.sha256(mine.read_bytes()).hexdigest()
