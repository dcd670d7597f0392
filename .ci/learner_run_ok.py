"""CI: after `exercises init` and `check LAB` in the container, the workspace and the run are the learner's.

    python .ci/learner_run_ok.py WORK LAB UID
Fails unless WORK/LAB.py and the newest run's files belong to UID (the owner of results/), and that run graded
the mounted workspace (its manifest names it) with every exercise not passing (fresh stubs).
"""

import json
import sys
from pathlib import Path

work, lab, uid = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
run_dir = Path("results/latest-check").resolve()  # check moves its own pointer, not run's latest
files = [work / f"{lab}.py", run_dir / "manifest.json", run_dir / lab / "result.json"]
owners = {str(f): f.stat().st_uid for f in files}
assert set(owners.values()) == {uid}, f"written as another user than {uid}: {owners}"
manifest = json.loads((run_dir / "manifest.json").read_text())
assert manifest["implementation"]["work"] == "/workshop/my-work", manifest["implementation"]
result = json.loads((run_dir / lab / "result.json").read_text())
passing = [ex for ex, r in result["exercises"].items() if r["passed"]]
assert not passing, f"fresh stubs passed {passing}"
print(
    f"learner run ok: {run_dir.name} graded {work}/{lab}.py as uid {uid}; {len(result['exercises'])} exercises"
)
