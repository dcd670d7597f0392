"""`python -m tools gpu-record` (tools/gpu_record.py) and the suite's device default.

The tool runs on GPU hosts; here its steps are stand-ins (small Python commands that write what the workshop and
pytest would), so what it records, how it decides pass or fail, and how it stops are tested on the CPU.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from tools import gpu_record

ROOT = Path(__file__).resolve().parents[2]

JUNIT = """<testsuites><testsuite name="pytest">
<testcase classname="tests.test_ops_softmax" name="test_gpu_big_shapes"/>
<testcase classname="tests.test_model" name="test_cuda_logits_match_cpu">{case}</testcase>
<testcase classname="tests.test_compile_lab" name="test_cuda_run"><skipped message="no"/></testcase>
</testsuite></testsuites>"""
FAILURE = '<failure message="assert 1 == 2"/>'


def fake_workshop(run_out: Path, failing_lab: str | None) -> str:
    """A stand-in for `python -m workshop run`: a run folder with a manifest, two labs, and results/latest."""
    labs = {lab: {"passed": lab != failing_lab} for lab in ("minigpt", "compile")}
    return (
        "import json, os, pathlib\n"
        f"run = pathlib.Path({str(run_out)!r}) / 'r1'\n"
        f"labs = {labs!r}\n"
        "for lab, entry in labs.items():\n"
        "    (run / lab).mkdir(parents=True)\n"
        "    (run / lab / 'summary.md').write_text('# ' + lab + ' [trace](linked/trace.json) [web](https://x.org/a)')\n"
        "    (run / lab / 'linked').mkdir()\n"
        "    (run / lab / 'linked' / 'trace.json').write_text('{}')\n"
        "    (run / lab / 'trace.json').write_text('{}')\n"
        "(run / 'manifest.json').write_text(json.dumps({'labs': labs}))\n"
        "os.symlink('r1', run.parent / 'latest')\n"
        f"raise SystemExit({int(failing_lab is not None)})\n"
    )


def use_stand_ins(monkeypatch, failing_lab=None, failing_test=False, tests_sleep=0.0):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "Stand-in GPU")

    def steps(run_out, n, suite, junit):
        xml = JUNIT.format(case=FAILURE if failing_test else "")
        tests = f"import time, pathlib; time.sleep({tests_sleep}); pathlib.Path({str(junit)!r}).write_text({xml!r})"
        return [
            gpu_record.Step(
                "workshop", [sys.executable, "-c", fake_workshop(run_out, failing_lab)]
            ),
            gpu_record.Step("report", [sys.executable, "-c", "pass"]),
            gpu_record.Step(
                "tests", [sys.executable, "-c", tests + f"; raise SystemExit({int(failing_test)})"]
            ),
        ]

    monkeypatch.setattr(gpu_record, "steps", steps)


def args(out: Path) -> SimpleNamespace:
    return SimpleNamespace(
        out=str(out), suite="gpu", n=None, command_line="python -m tools gpu-record"
    )


def test_a_passing_run_is_recorded_with_what_ran_and_how_long(tmp_path, monkeypatch):
    use_stand_ins(monkeypatch)
    assert gpu_record.main(args(tmp_path / "rec")) == 0
    record = json.loads((tmp_path / "rec" / "record.json").read_text())
    assert record["passed"] and record["labs"] == {"minigpt": True, "compile": True}
    assert (
        record["machine"]["gpus"] == ["Stand-in GPU"]
        and record["machine"]["torch"] == torch.__version__
    )
    assert [s["name"] for s in record["steps"]] == ["workshop", "report", "tests"]
    assert all(s["exit_code"] == 0 and s["seconds"] >= 0 for s in record["steps"])
    assert (record["tests"]["passed"], record["tests"]["skipped"]) == (2, 1)
    readme = (tmp_path / "rec" / "README.md").read_text()
    assert readme.startswith("# GPU record: passed") and "1 x Stand-in GPU" in readme
    kept = tmp_path / "rec"
    assert (kept / "minigpt" / "summary.md").is_file() and (kept / "manifest.json").is_file()
    assert (kept / "compile" / "linked" / "trace.json").is_file()  # the summary links it
    assert not (kept / "minigpt" / "trace.json").exists()


@pytest.mark.parametrize(
    "planted, named",
    [
        ({"failing_lab": "compile"}, "`compile`: FAILED"),
        ({"failing_test": True}, "test_cuda_logits_match_cpu`: failed"),
    ],
    ids=["a lab fails", "a test fails"],
)
def test_a_failure_fails_the_record_and_is_named(tmp_path, monkeypatch, planted, named):
    use_stand_ins(monkeypatch, **planted)
    assert gpu_record.main(args(tmp_path / "rec")) == 1
    assert json.loads((tmp_path / "rec" / "record.json").read_text())["passed"] is False
    readme = (tmp_path / "rec" / "README.md").read_text()
    assert readme.startswith("# GPU record: FAILED") and named in readme


def test_a_record_never_overwrites_another(tmp_path, monkeypatch, capsys):
    use_stand_ins(monkeypatch)
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "record.json").write_text("{}")
    assert gpu_record.main(args(tmp_path / "rec")) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert (tmp_path / "rec" / "record.json").read_text() == "{}"


@pytest.mark.skipif(torch.cuda.is_available(), reason="the case of a machine without a GPU")
def test_without_a_gpu_it_says_so_in_one_line_and_writes_nothing(tmp_path):
    cmd = [sys.executable, "-m", "tools", "gpu-record", "--out", str(tmp_path / "rec")]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.strip().count("\n") == 0
    assert "no CUDA GPU" in proc.stderr and not (tmp_path / "rec").exists()


STOPPABLE = """
import sys, torch
sys.path.insert(0, {root!r})  # the repository: tests.tools and tools (the tests folder would shadow tools)
from tests.tools import test_gpu_record as t
from tools import gpu_record

class Patch:
    def setattr(self, obj, name, value):
        setattr(obj, name, value)

t.use_stand_ins(Patch(), tests_sleep=60)
sys.exit(gpu_record.main(t.args(__import__("pathlib").Path({out!r}))))
"""


def children_of(pid: int) -> list[int]:
    """The processes whose parent is pid, from /proc (no pgrep needed)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # it ended meanwhile
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def test_sigterm_stops_the_step_records_what_ran_and_leaves_no_process(tmp_path):
    script = STOPPABLE.format(root=str(ROOT), out=str(tmp_path / "rec"))
    proc = subprocess.Popen(
        [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    for (
        line
    ) in proc.stdout:  # the steps before the tests (a few seconds); at its end, the asserts say why
        if line.startswith(("gpu-record: tests:", "gpu-record: passed")):
            break
    time.sleep(1)  # the tests step has started
    children = children_of(proc.pid)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 143, out
    assert "stopped by SIGTERM" in out and out.strip().count("\n") == 0
    record = json.loads((tmp_path / "rec" / "record.json").read_text())
    assert record["stopped"] == "stopped by SIGTERM" and record["passed"] is False
    assert (
        record["steps"][-1]["name"] == "tests"
        and record["steps"][-1]["exit_code"] == -signal.SIGTERM
    )
    assert children and all(not Path(f"/proc/{pid}").exists() for pid in children)


def test_the_suites_labs_run_on_the_gpu_where_there_is_one_and_on_the_cpu_elsewhere():
    """tests/conftest.py's default: `python -m pytest` on a GPU host runs the gpu tests' labs on the GPU."""
    probe = "import sys; sys.path.insert(0, 'tests'); import conftest; print(conftest.TEST_DEVICE)"
    env = {k: v for k, v in os.environ.items() if k != "WORKSHOP_TEST_DEVICE"}
    found = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert found.stdout.strip() == ("cuda" if torch.cuda.is_available() else "cpu"), found.stderr
    env["WORKSHOP_TEST_DEVICE"] = "cpu"
    forced = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert forced.stdout.strip() == "cpu", forced.stderr
