"""The worker: the learner's code runs in a process of its own, and only wire values come back.

One native worker serves most tests here (started once: `import torch` takes seconds); each test that breaks
it (a crash, a hang) checks that the next request gets a fresh one.
"""

from __future__ import annotations

import io
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from workshop.foundations.worker_process import LOG_CAP, NativeWorker
from workshop.learner import wire
from workshop.learner.learner_code import LearnerCodeFailed, LearnerFile, Solution, Worker

LEARNER = """
import torch

def double(x):
    return 2 * x

def pair(x, y):
    return {"sum": x + y, "items": [x.sum().item(), None, "text", True], "t": (1, 2.5)}

def boom(x):
    raise ValueError("bad shape " + str(tuple(x.shape)))

def stub(x):
    raise NotImplementedError("toy.stub: write it")

def leaves_an_exit(x):
    raise SystemExit(3)

def a_set(x):
    return {"b", "a"}

def a_range(x):
    return range(3)

def spin(x):
    while True:
        pass

def crash(x):
    import ctypes
    ctypes.string_at(0)

def chatter(x, n):
    for _ in range(n):
        print("x" * 1000)
    return x

def environment():
    import os
    return dict(os.environ)

def device_of(x):
    return str(x.device)

def where_am_i():
    import os
    return [os.getcwd(), os.getuid(), open("/proc/self/limits").read()]

def leave_a_daemon():
    import os, subprocess
    p = subprocess.Popen(["sleep", "300"], start_new_session=True)
    return p.pid

ANSWERS = {"nodes": 10, "shape": [176, 600], "leaf": "b"}
"""


class Unread(LearnerFile):
    """A learner file the lab's process does not read for refusals: these tests are about the worker, not the
    source rules (grading/test_source_check.py); its header allows what it imports."""

    def refusals(self):
        return []


def line_of(text: str) -> str:
    """my-work/toy.py:N, N the line of LEARNER that holds `text`."""
    return f"my-work/toy.py:{LEARNER.splitlines().index(text) + 1}"


def learner() -> LearnerFile:
    return Unread(LEARNER, "my-work/toy.py", LEARNER)


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    log = tmp_path_factory.mktemp("worker") / "worker.log"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("WORKSHOP_SECRET", "the instructor's")  # what the worker must not see
        found = Worker(NativeWorker("cpu", log), "cpu", learner())
        found.ask(
            {"op": "probe", "target": {"attributes": ["ANSWERS"], "one": True}}, 20
        )  # started with the secret here
        yield found
    found.stop()


def call(worker, name, *args, limit=20.0):
    return Solution(worker, {"attributes": [name], "one": True}, limit)(*args)


def failure(worker, name, *args, limit=20.0) -> LearnerCodeFailed:
    with pytest.raises(LearnerCodeFailed) as e:
        call(worker, name, *args, limit=limit)
    return e.value


def test_values_cross_the_wire_both_ways(worker):
    x = torch.arange(6.0).reshape(2, 3)
    assert torch.equal(call(worker, "double", x), 2 * x)
    got = call(worker, "pair", x, x)
    assert torch.equal(got["sum"], 2 * x)
    assert got["items"] == [15.0, None, "text", True] and got["t"] == (1, 2.5)
    assert Solution(worker, {"attributes": ["ANSWERS"], "one": True}).value == {
        "nodes": 10,
        "shape": [176, 600],
        "leaf": "b",
    }


def test_a_probe_runs_in_the_worker_on_the_learners_function(worker):
    impl = Solution(worker, {"attributes": ["double"], "one": True}, 20)
    assert impl.probe(getattr, "__name__") == "double"


def test_a_probe_over_several_pieces_gets_them_by_name_and_hears_of_every_missing_one(worker):
    both = Solution(worker, {"attributes": ["double", "pair"]}, 20)
    assert both.probe(sorted) == ["double", "pair"]
    with pytest.raises(LearnerCodeFailed) as e:
        Solution(worker, {"attributes": ["double", "nope", "none"]}, 20).probe(len)
    assert (e.value.kind, e.value.error) == ("missing", "nope, none")


def test_the_learners_errors_come_back_with_their_file_and_line(worker):
    e = failure(worker, "boom", torch.ones(2, 3))
    assert (e.kind, e.where) == (
        "error",
        line_of('    raise ValueError("bad shape " + str(tuple(x.shape)))'),
    )
    assert e.error == "ValueError: bad shape (2, 3)"
    stub = failure(worker, "stub", torch.ones(1))
    assert stub.kind == "not_started" and stub.error == "toy.stub: write it"
    assert failure(worker, "leaves_an_exit", torch.ones(1)).kind == "error"
    assert failure(worker, "no_such_function").kind == "missing"
    assert torch.equal(call(worker, "double", torch.ones(1)), torch.full((1,), 2.0))


def test_what_cannot_cross_the_wire_is_an_error_of_the_learners(worker):
    e = failure(worker, "a_range", torch.ones(1))
    assert e.kind == "wire" and "range" in e.error


def test_a_set_crosses_as_a_sorted_list(worker):
    """A set of names is a natural answer (a 'names' question compares them as a set): it crosses as a list."""
    assert call(worker, "a_set", torch.ones(1)) == ["a", "b"]


def test_an_endless_loop_ends_at_its_cpu_limit_with_the_line(worker):
    e = failure(worker, "spin", torch.ones(1), limit=1.0)
    assert e.kind == "time" and e.where in (line_of("    while True:"), line_of("        pass")), e


def test_a_crash_in_native_code_fails_the_call_and_a_fresh_worker_answers_the_next(worker):
    e = failure(worker, "crash", torch.ones(1))
    assert e.kind == "died" and "SIGSEGV" in e.error, e
    assert e.where == line_of("    ctypes.string_at(0)"), e
    assert torch.equal(call(worker, "double", torch.ones(1)), torch.full((1,), 2.0))


def test_the_worker_knows_no_path_of_the_run_and_no_secret(worker):
    """Its environment is made from nothing: the module's worker was started with a secret in ours."""
    env = call(worker, "environment")
    assert "WORKSHOP_SECRET" not in env
    assert not any(name in env for name in ("SSH_AUTH_SOCK", "WORKSHOP_RUN_DIR", "PWD", "OLDPWD"))
    assert not any("pytest-of" in value for value in env.values())  # no folder of this test session
    cwd, uid, limits = call(worker, "where_am_i")
    assert cwd.startswith(str(Path(env["TMPDIR"]))) and env["HOME"] == env["TMPDIR"]
    # set by the worker on itself before any request (a root without CAP_SYS_RESOURCE may not prlimit it)
    rows = {line[:26].strip(): line[26:].split()[:2] for line in limits.splitlines()[1:]}
    assert rows["Max cpu time"] == ["900", "905"]
    assert rows["Max processes"] == ["512", "512"] and rows["Max core file size"] == ["0", "0"]
    assert rows["Max file size"] == [str(256 * 2**20)] * 2
    assert rows["Max data size"] == [str(4 * 2**30)] * 2


def test_a_process_the_learner_left_behind_is_killed_with_the_worker(tmp_path):
    worker = Worker(NativeWorker("cpu", tmp_path / "log"), "cpu", learner())
    pid = call(worker, "leave_a_daemon")
    assert os.path.exists(f"/proc/{pid}")
    worker.stop()
    time.sleep(0.5)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_the_workers_output_is_capped_and_never_read_as_anything(tmp_path):
    worker = Worker(NativeWorker("cpu", tmp_path / "worker.log"), "cpu", learner())
    call(worker, "chatter", torch.ones(1), 3000)  # 3 MB printed
    worker.stop()
    log = (tmp_path / "worker.log").read_bytes()
    assert LOG_CAP - 1100 < len(log) < LOG_CAP + 100 and b"more bytes of output, not kept" in log


# ---- the wire itself ----
class Planted:
    def __reduce__(self):
        return (os.system, ("touch /tmp/planted-by-a-worker",))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
def test_a_pickled_object_from_the_worker_is_never_unpickled():
    payload = pickle.dumps({"ok": True, "value": Planted()})
    with pytest.raises(wire.WireError, match="not a wire value"):
        wire.loads(payload)
    buffer = io.BytesIO()
    torch.save({"value": Planted()}, buffer)
    with pytest.raises(wire.WireError, match="not a wire value"):
        wire.loads(buffer.getvalue())
    assert not os.path.exists("/tmp/planted-by-a-worker")


def test_frames_past_the_cap_and_cut_frames_are_refused():
    read, write = os.pipe()
    channel = wire.Channel(read, write)
    os.write(write, (wire.MAX_FRAME + 1).to_bytes(8, "big"))
    with pytest.raises(wire.WireError, match="at most"):
        channel.receive(time.monotonic() + 5)
    os.write(write, (100).to_bytes(8, "big") + b"short")
    with pytest.raises(wire.ChannelTimeout):
        channel.receive(time.monotonic() + 0.5)
    os.close(read)
    os.close(write)


@pytest.mark.gpu
def test_on_a_gpu_the_learners_function_gets_its_tensors_on_the_gpu(tmp_path):
    """A tensor the lab sends arrives on the lab's device (the load request names it): the learner's code computes
    where the lab does, not on the CPU behind its back (and a Triton kernel finds its tensor on the GPU)."""
    worker = Worker(NativeWorker("cuda", tmp_path / "log"), "cuda", learner())
    try:
        assert call(worker, "device_of", torch.ones(2, device="cuda")) == "cuda:0"
    finally:
        worker.stop()


def test_a_misspelt_limits_option_stops_the_worker_rather_than_run_it_unlimited():
    # the launcher passes --rlimits; an option the worker does not know must not leave it with no limits
    wrong = subprocess.run(
        [sys.executable, "-m", "workshop.learner.worker", "--rlimts", "{}"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 2 and "unrecognized arguments: --rlimts" in wrong.stderr
