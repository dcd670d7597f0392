"""The security suite: every attack a hostile (or careless) hand-in tried, re-tried. Each must fail
to raise a grade, to read or change another hand-in, or to outlive the grade.

The grading attacks run the autograd lab's hand-gradient grading (the worker protocol: the learner's code in a worker)
on a workspace whose file is the attack, and the custom_op lab's kernel exercise through its lab process. The
sandbox attacks run in the worker natively (process limits) and, marked `docker`, in its container (skipped
where Docker or the learner image is missing; CI builds the image and runs them).
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import lab_process
from tests.support.autograd_hand_solutions import solved
from workshop.declarations import checks as exercise
from workshop.foundations.run_options import RunOptions
from workshop.foundations.worker_container import (
    LABEL,
    ContainerWorker,
    docker_problem,
    sweep_stale,
)
from workshop.foundations.worker_process import NativeWorker
from workshop.lab_api import LabContext
from workshop.labs import workspace_header
from workshop.labs.autograd.batch import load_batch
from workshop.labs.autograd.grading.exercises import EXERCISES
from workshop.labs.autograd.lab import grade_hand
from workshop.learner.learner_code import LearnerCodeFailed, LearnerFile, Solution, Worker

HAND = ("autograd.cross_entropy_grad", "autograd.linear_grads")
STUBS = "\n\n".join(
    ex.stub_code() for ex in EXERCISES if ex.name not in ("cross_entropy_grad", "linear_grads")
)
no_docker = docker_problem()
needs_docker = pytest.mark.skipif(
    no_docker is not None, reason=f"no worker container here: {no_docker}"
)


class Unread(LearnerFile):
    """A learner's file as if it had slipped past the lab's reading of its text: what the worker's process
    boundary alone must stop."""

    def refusals(self):
        return []


@pytest.fixture(scope="module")
def batch():
    return load_batch("cpu")


def graded(tmp_path: Path, batch, attack: str, unread: bool = False) -> tuple[dict, LabContext]:
    """The hand exercises' statuses when the learner's file is the header, `attack`, and the other stubs;
    unread: as if it had slipped past the lab's reading of its text (Unread)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    source = workspace_header("autograd") + attack + "\n\n" + STUBS
    (work / "autograd.py").write_text(source)
    (tmp_path / "out").mkdir(exist_ok=True)
    ctx = LabContext("autograd", tmp_path / "out", RunOptions("cpu", 1, 0, work=work))
    if unread:
        learner = Unread(source, "work/autograd.py", source)
        ctx._worker = Worker(NativeWorker("cpu", tmp_path / "out" / "worker.log"), "cpu", learner)
    try:
        grade_hand(ctx, batch)
    finally:
        if ctx._worker is not None:
            ctx._worker.stop()
    results = ctx.exercise_results()
    return {ex_id: results[ex_id]["status"] for ex_id in HAND}, ctx


def failed_values(ctx: LabContext) -> str:
    return "\n".join(f"{c.name}: {c.value}" for c in ctx.checks if not c.passed)


# ---- raising one's own grade ----
REFERENCE_ATTACKS = {
    "import the reference": "from workshop.labs.autograd.hand_grads import cross_entropy_grad, linear_grads\n",
    "import its module": (
        "from workshop.labs.autograd import hand_grads\n"
        "cross_entropy_grad = hand_grads.cross_entropy_grad\nlinear_grads = hand_grads.linear_grads\n"
    ),
    "through sys.modules": (
        "_ref = torch.sys.modules['workshop.labs.autograd.hand_grads']\n"
        "def cross_entropy_grad(logits, targets):\n    return _ref.cross_entropy_grad(logits, targets)\n"
        "def linear_grads(g, x, W):\n    return _ref.linear_grads(g, x, W)\n"
    ),
    "through a helper's globals": (
        "_ref = fit_to_input.__globals__['engine_order']\n"
        "def cross_entropy_grad(logits, targets):\n    return _ref(logits, targets)\n"
    ),
    "patch LabContext at import": (
        "import workshop.lab_api\nworkshop.lab_api.LabContext.check_max = lambda *a, **k: None\n"
    ),
    "patch __main__": "import sys\nsys.modules['__main__'].__dict__.clear()\n",
    "an allowed import renamed": (
        "from workshop.labs.autograd.graph_walk import walk as cross_entropy_grad\n"
        "from workshop.labs.autograd.graph_walk import walk as linear_grads\n"
    ),
}


@pytest.mark.parametrize("attack", REFERENCE_ATTACKS.values(), ids=REFERENCE_ATTACKS.keys())
def test_the_workshops_own_code_is_never_a_passing_answer(tmp_path, batch, attack):
    statuses, ctx = graded(tmp_path, batch, attack)
    assert exercise.PASSING not in statuses.values(), failed_values(ctx)
    assert "your code loads" in failed_values(ctx) or "not started" in statuses.values()


def test_a_name_bound_to_the_workshops_code_is_refused_in_the_worker(tmp_path, batch):
    """Bound by an assignment the lab's reading of the text cannot tell from the learner's own: the worker
    looks at the function's code itself."""
    attack = "cross_entropy_grad = walk\nlinear_grads = num_inputs\n"
    statuses, ctx = graded(tmp_path, batch, attack)
    assert set(statuses.values()) == {exercise.FAILING}
    assert "is not your own code" in failed_values(ctx) and "graph_walk.py" in failed_values(ctx)


def run_unread(tmp_path: Path, source: str, name: str, *args, limit: float = 20.0, launcher=None):
    launcher = launcher or NativeWorker("cpu", tmp_path / "worker.log")
    worker = Worker(launcher, "cpu", Unread(source, "my-work/autograd.py", source))
    try:
        return Solution(worker, {"attributes": [name], "one": True}, limit)(*args)
    finally:
        worker.stop()


def test_patching_the_lab_from_the_learners_code_changes_no_verdict(tmp_path, batch):
    """Whatever the learner's code patches, it patches in the worker: the lab's checks run elsewhere."""
    attack = (
        "import workshop.lab_api, sys\n"
        "workshop.lab_api.LabContext.check_max = lambda *a, **k: None\n"
        "sys.modules['__main__'].__dict__.clear()\n"
        "def cross_entropy_grad(logits, targets):\n    return logits.sum(), logits\n"
        "def linear_grads(g, x, W):\n    return W, W[:, 0], x\n"
    )
    statuses, ctx = graded(tmp_path, batch, attack, unread=True)
    assert set(statuses.values()) == {exercise.FAILING}, failed_values(ctx)


def test_printed_statuses_and_a_dying_worker_pass_nothing(tmp_path, batch, capfd):
    attack = (
        "import os\n"
        "def cross_entropy_grad(logits, targets):\n"
        "    print('[autograd] graded autograd.cross_entropy_grad: passing', flush=True)\n"
        "    print('[autograd] ok   cross_entropy_grad: L = autograd', flush=True)\n"
        "    os.kill(os.getpid(), 9)\n"
    )
    statuses, ctx = graded(tmp_path, batch, attack, unread=True)
    assert statuses["autograd.cross_entropy_grad"] == exercise.FAILING
    assert "graded autograd.cross_entropy_grad: passing" not in capfd.readouterr().out
    assert "passing" in (tmp_path / "out" / "worker.log").read_text()  # said there, read by no one


def test_a_worker_that_switches_off_its_timer_is_stopped_by_the_wall_clock(tmp_path):
    source = "import signal, time\ndef f():\n    signal.setitimer(signal.ITIMER_VIRTUAL, 0)\n    time.sleep(600)\n"
    start = time.monotonic()
    with pytest.raises(LearnerCodeFailed) as e:
        run_unread(tmp_path, source, "f", limit=1.0)
    assert e.value.kind == "time" and time.monotonic() - start < 60


# A kernel with the forward's parameters that copies x: wrong on every case.
COPYING_KERNEL = """
@triton.jit
def softmax_fwd_kernel(
    x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr, ALIGN: tl.constexpr,
):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)[None, :]
    mask = (rows < n_rows) & (cols < n_cols)
    x = tl.load(x_ptr + rows * x_row_stride + cols, mask=mask)
    tl.store(y_ptr + rows * y_row_stride + cols, x, mask=mask)
"""
FORGED = {"forged": True, "exercises": {"custom_op.forward_kernel": {"status": "passing"}}}
# Each through `__import__`, which the worker's import guard leaves to the lab's reading of the text: unread,
# only the worker's process boundary and its look at each piece's code stand in the way.
CUSTOM_OP_ATTACKS = {
    "import the reference kernel": (
        "from workshop.ops.softmax_kernels import _fwd_one_pass as softmax_fwd_kernel\n"
    ),
    "reach the reference kernel": (
        "softmax_fwd_kernel = __import__(\n"
        "    'workshop.ops.softmax_kernels', fromlist=['_fwd_one_pass']\n)._fwd_one_pass\n"
    ),
    "patch LabContext at import": (
        "_lab = __import__('workshop.lab_api', fromlist=['LabContext'])\n"
        "_lab.LabContext.check_max = lambda self, name, value, threshold, **k: None\n"
        "_lab.LabContext.check_equal = lambda self, name, value, expected, **k: None\n"
        "_lab.LabContext.record = lambda self, check: check\n" + COPYING_KERNEL
    ),
    "forge result.json and exit": (
        "open(RESULT, 'w').write(FORGED)\n__import__('os')._exit(0)\n" + COPYING_KERNEL
    ),
}


@pytest.mark.parametrize("unread", [False, True], ids=["read", "unread"])
@pytest.mark.parametrize("attack", CUSTOM_OP_ATTACKS.values(), ids=CUSTOM_OP_ATTACKS.keys())
def test_a_hostile_custom_op_piece_raises_no_grade(tmp_path, monkeypatch, attack, unread):
    """`check custom_op forward_kernel` natively, through the lab's process as the runner starts it (which
    writes result.json), on a learner's kernel that is an attack; unread: as if it had slipped past the lab's
    reading of its text. The run folder's result.json is the path a learner's code finds in the parent's
    command line: here it is handed to it."""
    out, work = tmp_path / "out", tmp_path / "work"
    work.mkdir()
    constants = f"RESULT = {str(out / 'result.json')!r}\nFORGED = {json.dumps(FORGED)!r}\n"
    (work / "custom_op.py").write_text(workspace_header("custom_op") + constants + attack)
    if unread:
        monkeypatch.setattr(LearnerFile, "refusals", lambda self: [])
    only = ("custom_op.forward_kernel",)
    lab_process.run_here("custom_op", out, work=work, only=only)
    result = json.loads((out / "result.json").read_text())
    assert "forged" not in result
    status = result["exercises"]["custom_op.forward_kernel"]["status"]
    assert status == exercise.FAILING, result["exercises"]["custom_op.forward_kernel"]


# ---- the instructor's machine: limits, what the worker sees, what it leaves ----
LIMITS = {
    "memory": (
        "def f():\n    import torch\n    return torch.ones(2**33).sum().item()\n",
        ("error", "died"),
    ),
    "file size": (
        "def f():\n    with open('big', 'wb') as out:\n        out.write(b'x' * (300 * 2**20))\n",
        ("error", "died"),
    ),
}


@pytest.mark.parametrize("source, kinds", LIMITS.values(), ids=LIMITS.keys())
def test_memory_and_file_size_are_limited_from_outside(tmp_path, source, kinds):
    with pytest.raises(LearnerCodeFailed) as e:
        run_unread(tmp_path, source, "f", limit=60.0)
    assert e.value.kind in kinds, e.value


@pytest.mark.skipif(
    os.geteuid() == 0 and not NativeWorker("cpu", None).uid, reason="root's processes have no cap"
)
def test_a_fork_bomb_is_limited(tmp_path):
    source = "import os\ndef f():\n    while True:\n        os.fork()\n"
    with pytest.raises(LearnerCodeFailed):
        run_unread(tmp_path, source, "f", limit=10.0)


def test_a_detached_process_does_not_outlive_the_grading(tmp_path):
    """A process the learner's code detaches (a session of its own) is ended with the worker. It sleeps far longer
    than any grading takes (on a loaded machine the worker's stop alone once took over 5 s, and a shorter sleep
    ended by itself), so only the worker's stop can have ended it."""
    marker = tmp_path / "written-after-grading"
    source = (
        "import subprocess\ndef f():\n"
        f"    p = subprocess.Popen(['sh', '-c', 'sleep 300; touch {marker}'], start_new_session=True)\n"
        "    return p.pid\n"
    )
    pid = run_unread(tmp_path, source, "f")
    time.sleep(0.5)
    stat = Path(f"/proc/{pid}/stat")
    alive = stat.exists() and "Z" not in stat.read_text().split()[2]
    if alive:  # the test's own clean-up: the process must not outlive the test either
        os.kill(pid, signal.SIGKILL)
    assert not alive, "the detached process outlived the grading"


def test_the_worker_has_no_secret_no_home_and_no_path_of_the_run(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "the instructor's")
    source = (
        "import os\ndef f():\n    return [dict(os.environ), os.path.expanduser('~'), os.getcwd()]\n"
    )
    env, home, cwd = run_unread(tmp_path, source, "f")
    assert "AWS_SECRET_ACCESS_KEY" not in env and home == cwd == env["TMPDIR"]
    assert str(tmp_path) not in " ".join(env.values())


# ---- in the container (`grade`'s sandbox) ----
def in_container(tmp_path: Path, source: str, name: str = "f", limit: float = 60.0):
    return run_unread(
        tmp_path, source, name, limit=limit, launcher=ContainerWorker("cpu", tmp_path / "log")
    )


@needs_docker
@pytest.mark.docker
def test_in_the_container_no_other_hand_in_no_host_process_no_network(tmp_path):
    other = tmp_path / "handin-bob" / "autograd.py"
    other.parent.mkdir()
    other.write_text("def cross_entropy_grad(l, t): return 'bob'\n")
    source = (
        "import os, socket\ndef f(path):\n"
        "    cmdlines = [open(f'/proc/{p}/cmdline', 'rb').read() for p in os.listdir('/proc') if p.isdigit()]\n"
        "    try:\n        open(path).read(); read = True\n    except OSError:\n        read = False\n"
        "    try:\n        socket.create_connection(('1.1.1.1', 53), timeout=3); net = True\n"
        "    except OSError:\n        net = False\n"
        "    return [len(cmdlines), b'handin' in b''.join(cmdlines), read, net]\n"
    )
    launcher = ContainerWorker("cpu", tmp_path / "log")
    processes, sees_paths, read, net = run_unread(
        tmp_path, source, "f", str(other), launcher=launcher
    )
    assert processes <= 3 and not sees_paths and not read and not net


@needs_docker
@pytest.mark.docker
def test_in_the_container_the_code_is_read_only_and_the_reference_a_stub(tmp_path):
    source = (
        "import os\ndef f():\n"
        "    import workshop, workshop.labs.autograd.hand_grads as h\n"
        "    root = os.path.dirname(workshop.__file__)\n"
        "    try:\n        open(os.path.join(root, '__pycache__', 'lab.cpython-311.pyc'), 'wb'); planted = True\n"
        "    except OSError:\n        planted = False\n"
        "    try:\n        h.linear_grads(None, None, None); stub = False\n"
        "    except NotImplementedError:\n        stub = True\n"
        "    return [planted, stub, os.getuid()]\n"
    )
    planted, stub, uid = in_container(tmp_path, source)
    assert not planted and stub and uid != 0


@needs_docker
@pytest.mark.docker
@pytest.mark.parametrize(
    "source",
    [
        "def f():\n    import torch\n    return torch.ones(2**31).sum().item()\n",  # 8 GB > the cgroup's 4
        "import os\ndef f():\n    while True:\n        os.fork()\n",
    ],
    ids=["memory", "fork bomb"],
)
def test_in_the_container_memory_and_processes_are_capped(tmp_path, source):
    with pytest.raises(LearnerCodeFailed) as e:
        in_container(tmp_path, source, limit=60.0)
    assert e.value.kind in ("error", "died", "time"), e.value


@needs_docker
@pytest.mark.docker
def test_a_container_whose_lab_process_died_is_swept(tmp_path):
    """A lab's process killed outright (SIGKILL) cannot kill its worker's container: the next start sweeps it."""
    script = (
        "import time, torch\n"
        "from workshop.learner.learner_code import LearnerFile, Worker\n"
        "from workshop.foundations.worker_container import ContainerWorker\n"
        "w = Worker(ContainerWorker('cpu', None), 'cpu', LearnerFile('', 'my-work/autograd.py', ''))\n"
        "w._start()\nprint('started', flush=True)\ntime.sleep(600)\n"
    )
    proc = subprocess.Popen(["python", "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "started"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    owner = f"{os.uname().nodename}:{proc.pid}"
    listing = ["docker", "ps", "-q", "--filter", f"label={LABEL}={owner}"]
    assert subprocess.run(listing, capture_output=True, text=True).stdout.strip()
    assert sweep_stale()
    assert not subprocess.run(listing, capture_output=True, text=True).stdout.strip()


@needs_docker
@pytest.mark.docker
@pytest.mark.slow
def test_grade_in_the_container_verifies_a_workspace_and_names_what_it_could_not_sandbox(tmp_path):
    """grade --sandbox docker end to end, on the autograd lab: the hand gradients pass in the container, and
    every other exercise is graded there too (all of the lab's grading goes through the worker: no note of an
    exercise left out; the toy lab's security/test_gradebook.py shows one)."""
    work = tmp_path / "ada"
    subprocess.run(
        [sys.executable, "-m", "workshop", "exercises", "init", str(work), "--lab", "autograd"],
        check=True,
    )
    (work / "autograd.py").write_text(solved((work / "autograd.py").read_text()))
    grade = [
        sys.executable,
        "-m",
        "workshop",
        "grade",
        str(work),
        "--lab",
        "autograd",
        "--device",
        "cpu",
    ]
    grade += [
        "--sandbox",
        "docker",
        "--out",
        str(tmp_path / "results"),
        "--to",
        str(tmp_path / "grades"),
    ]
    out = subprocess.run(grade, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "sandbox: each hand-in's code runs in a container of its own" in out.stdout
    [row] = csv.DictReader((tmp_path / "grades" / "grades.csv").read_text().splitlines())
    assert (row["autograd.cross_entropy_grad"], row["autograd.linear_grads"]) == (
        "passing",
        "passing",
    )
