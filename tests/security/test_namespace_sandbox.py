"""The namespace sandbox (bubblewrap), grade's isolation where Docker is missing: the attacks that succeeded
natively, re-tried in it. Each runs the learner's code (as if it had slipped past the reading of its source: the
worker's boundary alone must stop it) in a worker whose code is the learner edition and whose hidden folders are
a hand-in of someone else and the instructor's package. Skipped where bubblewrap cannot run."""

from __future__ import annotations

import csv
import os
import signal
import site
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.security.test_hand_ins import run_unread
from tests.support.autograd_hand_solutions import solved
from workshop.foundations.worker_process import NativeWorker, code_root, namespace_problem
from workshop.grading import edition

no_sandbox = namespace_problem()
pytestmark = pytest.mark.skipif(
    no_sandbox is not None, reason=f"no namespace sandbox: {no_sandbox}"
)


@pytest.fixture(scope="module")
def learner_edition(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("edition")
    folder.chmod(0o755)  # a worker of its own uid (as root) reads it
    edition.build_learner(folder / "edition")
    return folder / "edition"


def in_sandbox(tmp_path: Path, edition_root: Path, source: str, *args, hidden=()):
    hide = (str(code_root() / "workshop"), *map(str, hidden))
    launcher = NativeWorker("cpu", tmp_path / "log", root=edition_root, hidden=hide)
    return run_unread(tmp_path, source, "f", *args, limit=60.0, launcher=launcher)


def test_no_other_hand_in_no_host_process_no_network(tmp_path, learner_edition, monkeypatch):
    """Natively a hand-in read the others, the network and (as a normal user) grade's /proc/<pid>/environ."""
    monkeypatch.setenv("WORKSHOP_PLANTED_SECRET", "the instructor's")
    other = tmp_path / "handin-bob"
    other.mkdir()
    (other / "autograd.py").write_text("def cross_entropy_grad(l, t): return 'bob'\n")
    source = (
        "import os, socket\ndef f(path, grade_pid):\n"
        "    pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "    try:\n        open(path).read(); read = True\n    except OSError:\n        read = False\n"
        "    try:\n        socket.create_connection(('1.1.1.1', 53), timeout=3); net = True\n"
        "    except OSError:\n        net = False\n"
        "    environ = []\n"
        "    for pid in pids + [str(grade_pid)]:\n"
        "        try:\n            environ.append(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "        except OSError:\n            pass\n"
        "    environ = b'WORKSHOP_PLANTED_SECRET' in b''.join(environ)\n"
        "    return [len(pids), read, net, environ]\n"
    )
    processes, read, net, environ = in_sandbox(
        tmp_path, learner_edition, source, str(other / "autograd.py"), os.getpid(), hidden=[other]
    )
    assert processes <= 3 and not read and not net and not environ


def test_the_code_and_the_venv_are_read_only_and_the_reference_a_stub(tmp_path, learner_edition):
    """The native attacks: importing the shipped reference (a stub here), planting a .pth in the venv that later
    labs would run, a .pyc beside the code."""
    packages = site.getsitepackages()[0]
    source = (
        "import os\ndef f(packages):\n"
        "    import workshop, workshop.labs.autograd.hand_grads as h\n"
        "    planted = []\n"
        "    for path in (os.path.join(packages, 'zz-planted.pth'),\n"
        "                 os.path.join(os.path.dirname(workshop.__file__), 'planted.pyc')):\n"
        "        try:\n            open(path, 'w').write('import os'); planted.append(path)\n"
        "        except OSError:\n            pass\n"
        "    try:\n        h.linear_grads(None, None, None); stub = False\n"
        "    except NotImplementedError:\n        stub = True\n"
        "    return [planted, stub, os.path.dirname(workshop.__file__)]\n"
    )
    planted, stub, package = in_sandbox(tmp_path, learner_edition, source, packages)
    assert planted == [] and stub and package.startswith(str(learner_edition))
    assert not (Path(packages) / "zz-planted.pth").exists()


def test_the_instructors_package_is_out_of_sight(tmp_path, learner_edition):
    source = "import os\ndef f(path):\n    return os.listdir(path)\n"
    assert in_sandbox(tmp_path, learner_edition, source, str(code_root() / "workshop")) == []


def test_a_daemon_does_not_outlive_its_worker(tmp_path, learner_edition):
    """A process that detaches twice (a daemon: out of the worker's session and process tree), natively the one
    that outlived grade and rewrote its table, ends with the worker's pid namespace. It becomes `sleep` with a
    token of this test's own (GNU sleep adds its arguments up), which no other process's command line has."""
    token = f"0.{os.getpid()}{time.monotonic_ns() % 10**6}"
    source = (
        "import os\ndef f(token):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        "        if os.fork() == 0:\n"
        "            os.execv('/bin/sleep', ['sleep', '300', token])\n"
        "        os._exit(0)\n"
        "    return os.getpid()\n"
    )
    in_sandbox(tmp_path, learner_edition, source, token)
    time.sleep(1.0)
    left = [p for p in Path("/proc").iterdir() if p.name.isdigit() and has_token(p, token)]
    for p in left:  # the test's own clean-up
        os.kill(int(p.name), signal.SIGKILL)
    assert not left, "the daemon outlived its worker"


def has_token(proc: Path, token: str) -> bool:
    try:
        return token.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


def test_without_the_sandbox_the_same_attacks_succeed(tmp_path, learner_edition):
    """The control: the same code in a plain worker of this process's uid reads the other hand-in, sees the host's
    processes and the instructor's package, and plants its .pth (removed at once: it only imports os)."""
    other = tmp_path / "handin-bob"
    other.mkdir()
    (other / "autograd.py").write_text("bob's\n")
    pth = Path(site.getsitepackages()[0]) / "zz-workshop-control.pth"
    source = (
        "import os\ndef f(other, package, pth):\n"
        "    pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
        "    try:\n        open(pth, 'w').write('import os\\n'); planted = True\n"
        "    except OSError:\n        planted = False\n"
        "    return [len(pids), open(other).read(), os.listdir(package) != [], planted]\n"
    )
    launcher = NativeWorker("cpu", tmp_path / "log", root=learner_edition)
    launcher.uid = None  # this process's own uid, as a normal user's grade runs it
    args = (str(other / "autograd.py"), str(code_root() / "workshop"), str(pth))
    try:
        processes, read, package, planted = run_unread(
            tmp_path, source, "f", *args, limit=60.0, launcher=launcher
        )
    finally:
        pth.unlink(missing_ok=True)
    assert processes > 3 and read == "bob's\n" and package
    assert planted == os.access(pth.parent, os.W_OK)


@pytest.mark.slow
def test_grade_in_the_namespace_sandbox_is_a_grade_and_hides_the_other_hand_ins(tmp_path):
    """grade --sandbox bwrap end to end, on the autograd lab: the learner edition built, an honest hand-in's hand
    gradients passing in the sandbox, a stub not started, and the table titled a grade (not "not isolated")."""
    ada, eve = tmp_path / "class" / "ada", tmp_path / "class" / "eve"
    for work in (ada, eve):
        subprocess.run(
            [sys.executable, "-m", "workshop", "exercises", "init", str(work), "--lab", "autograd"],
            check=True,
            capture_output=True,
        )
    (ada / "autograd.py").write_text(solved((ada / "autograd.py").read_text()))
    grade = [sys.executable, "-m", "workshop", "grade", str(ada), str(eve), "--lab", "autograd"]
    grade += ["--device", "cpu", "--sandbox", "bwrap", "--out", str(tmp_path / "results")]
    out = subprocess.run(grade + ["--to", str(tmp_path / "grades")], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "namespace sandbox of its own" in out.stdout
    rows = {r["learner"]: r for r in csv.DictReader((tmp_path / "grades" / "grades.csv").open())}
    assert (rows["ada"]["autograd.cross_entropy_grad"], rows["ada"]["autograd.linear_grads"]) == (
        "passing",
        "passing",
    )
    assert rows["eve"]["autograd.linear_grads"] == "not started"
    markdown = (tmp_path / "grades" / "grades.md").read_text()
    assert "not isolated" not in markdown.lower() and "not isolated" not in rows["ada"]["notes"]
