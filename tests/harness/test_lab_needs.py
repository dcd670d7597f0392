"""A lab whose dependency the platform lacks (Triton: Linux only, so not on macOS) fails with one line that says
why and points to Docker, instead of a traceback; every other lab still runs. Triton's absence is simulated the
way Python sees it on a Mac: `import triton` raises ImportError (sys.modules["triton"] = None)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support import lab_process
from workshop import labs

NO_TRITON = (
    'import sys\nsys.modules["triton"] = None  # as on macOS: import triton raises ImportError\n'
)


def test_only_the_labs_that_need_triton_miss_it(monkeypatch):
    assert all(
        spec.missing() == [] for spec in labs.all_labs().values()
    )  # Linux: Triton is installed
    monkeypatch.setitem(sys.modules, "triton", None)
    missing = {name: spec.missing() for name, spec in labs.all_labs().items()}
    assert missing.pop("custom_op") == ["triton"]
    assert all(m == [] for m in missing.values()), missing


def test_a_lab_without_triton_fails_with_one_line_pointing_to_docker(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(NO_TRITON)
    path = os.pathsep.join([str(tmp_path / "site"), os.environ.get("PYTHONPATH", "")])
    out = tmp_path / "custom_op"
    out.mkdir()
    proc = subprocess.run(
        lab_process.command("custom_op", out),
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": path},
        timeout=120,
    )
    result = json.loads((out / "result.json").read_text())
    assert proc.returncode == 1 and not result["passed"]
    [check] = result["checks"]
    assert (check["name"], check["value"], check["passed"]) == (
        "triton installed",
        "missing",
        False,
    )
    line = check["message"]
    assert (
        "Linux only" in line
        and "docker compose run --rm workshop-cpu workshop-session custom_op" in line
    )
    assert "\n" not in line and "Traceback" not in proc.stdout + proc.stderr
    assert line in (out / "summary.md").read_text()
