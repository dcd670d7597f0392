#!/usr/bin/env bash
# The GPU record alone, cut to the device time left: every lab on CUDA with the gpu tests beside it.
# Usage: bash .device/callG.sh REV   (carry .device)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
o=/tmp/o; mkdir -p $o
log=$OUT/callG.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$o/install.log" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >>"$log" 2>&1
(timeout 165 python3 -m pytest -q -n 4 -p no:cacheprovider -m gpu -rA --junitxml="$o/gpu_tests.xml" tests >"$o/gpu_tests.txt" 2>&1; echo "gpu tests exit $? at ${SECONDS}s" >>"$log") &
timeout 170 python3 -m workshop run --device cuda --n 1 --out /tmp/runs >"$o/labs.txt" 2>&1
echo "labs exit $? at ${SECONDS}s" >>"$log"
python3 -m workshop report --out /tmp/runs >>"$o/labs.txt" 2>&1
wait
tar czf "$OUT/all.tgz" -C /tmp o runs 2>/dev/null
cat "$log"; tail -9 "$o/labs.txt"; grep -E "passed|failed|FAILED|ERROR" "$o/gpu_tests.txt" | tail -6
