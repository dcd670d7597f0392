#!/usr/bin/env bash
# The GPU record of the merged tree (issue 37, this session's merges): every lab on CUDA beside the gpu tests
# (limit 380 s), then the benchmark's own tests. Each step writes under $OUT as it ends.
# Usage: bash .device/final6/call.sh REV   (carry .device)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
o=$OUT; log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
date -u +%H:%M:%S >>"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >>"$log" 2>&1
(timeout 240 python3 -m pytest -q -n 4 -p no:cacheprovider -m gpu -rA --junitxml="$o/gpu_tests.xml" tests >"$o/gpu_tests.txt" 2>&1; echo "gpu tests exit $? at ${SECONDS}s" >>"$log") &
timeout 380 python3 -m workshop run --device cuda --n 1 --out /tmp/runs >"$o/labs.txt" 2>&1
echo "labs exit $? at ${SECONDS}s" >>"$log"
python3 -m workshop report --out /tmp/runs >>"$o/labs.txt" 2>&1
wait
tar czf "$OUT/runs.tgz" -C /tmp runs 2>/dev/null
timeout 40 python3 -m pytest -q -n 0 -p no:cacheprovider tests/custom_op/test_bench_peers.py tests/tools/test_softmax_sweep.py >"$o/bench_tests.txt" 2>&1; echo "bench tests exit $? at ${SECONDS}s" >>"$log"
cat "$log"; grep -E ": (passed|failed)|incomplete" "$o/labs.txt"; grep -E "passed|failed|FAILED|ERROR" "$o/gpu_tests.txt" "$o/bench_tests.txt" | tail -8
