"""A check's two `import torch` at once (the learner's wait): the lab's process starts the learner's worker before it
imports torch itself, and that worker is the same sandbox as one started later: its own uid where the
lab's process is root, an environment made from nothing, its resource limits. torch is imported with the
collector off and its objects frozen (foundations/device.py, import_torch)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from workshop.foundations.worker_process import code_root

# Run in a fresh interpreter: this test session has imported torch long ago.
EARLY = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from workshop.learner.learner_code import LearnerFile, Solution, Worker
    from workshop.foundations.worker_process import NativeWorker

    SOURCE = '''
    import os
    def where_am_i():
        return [os.getuid(), dict(os.environ), open("/proc/self/limits").read()]
    '''

    class Unread(LearnerFile):
        def refusals(self):
            return []

    class Watched(NativeWorker):
        def start(self):
            self.torch_before = "torch" in sys.modules
            return super().start()

    launcher = Watched("cpu", Path(sys.argv[1]) / "worker.log")
    worker = Worker(launcher, "cpu", Unread(SOURCE, "my-work/toy.py", SOURCE))
    worker.begin()  # what the lab's process does first (harness.child: ctx.worker().begin())
    try:
        uid, env, limits = Solution(worker, {"attributes": ["where_am_i"], "one": True}, 20.0)()
    finally:
        worker.stop()
    print(json.dumps({"torch_before": launcher.torch_before, "torch_after": "torch" in sys.modules,
                      "uid": uid, "own_uid": launcher.uid, "env": env, "limits": limits}))
    """
)


def test_the_worker_starts_before_the_lab_imports_torch_and_is_the_same_sandbox(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("WORKSHOP_SECRET", "the instructor's")
    env = {**os.environ, "PYTHONPATH": str(code_root())}
    done = subprocess.run(
        [sys.executable, "-c", EARLY, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    assert not found["torch_before"] and found["torch_after"]
    if os.geteuid() == 0 and found["own_uid"] is not None:  # root: a uid of its own, as before
        assert found["uid"] == found["own_uid"] != 0
    assert "WORKSHOP_SECRET" not in found["env"] and str(tmp_path) not in " ".join(
        found["env"].values()
    )
    assert found["env"]["HOME"] == found["env"]["TMPDIR"]
    rows = {line[:26].strip(): line[26:].split()[:2] for line in found["limits"].splitlines()[1:]}
    assert rows["Max cpu time"] == ["900", "905"] and rows["Max processes"] == ["512", "512"]
    assert rows["Max data size"] == [str(4 * 2**30)] * 2


def test_finding_whether_another_uid_can_run_the_worker_imports_no_torch():
    script = (
        "import sys\nfrom workshop.foundations import worker_process as w\n"
        "w.others_can_run(w.code_root())\nprint('torch' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(code_root())}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "False", done.stderr


def test_torch_is_imported_with_the_collector_off_then_frozen_and_the_collector_back_on():
    script = (
        "import gc, sys\nfrom workshop.foundations.device import import_torch\n"
        "calls = []\ngc.callbacks.append(lambda phase, info: calls.append(phase))\n"
        "torch = import_torch()\n"
        "print(len(calls), gc.get_freeze_count() > 100_000, gc.isenabled(), torch is sys.modules['torch'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(code_root())}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["0", "True", "True", "True"], done.stderr


def test_torch_already_imported_is_only_returned(monkeypatch):
    import gc

    import torch

    from workshop.foundations.device import import_torch

    frozen = gc.get_freeze_count()
    assert import_torch() is torch and gc.get_freeze_count() == frozen and gc.isenabled()
