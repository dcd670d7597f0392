#!/usr/bin/env bash
# The session's GPU call on the merged wave 5 (issue 37) and issue 41's changes, cut to the device time left:
# every lab on CUDA (python -m workshop run --device cuda) with the gpu tests beside it, then the benchmark with
# the time left. Usage: bash .device/finalD.sh REV   (carry .device, .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
out=$OUT
log=$out/finalD.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >>"$log" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >>"$log" 2>&1
(timeout 230 python3 -m pytest -q -n 4 -p no:cacheprovider -m gpu -rA --junitxml="$out/gpu_tests.xml" tests >"$out/gpu_tests.txt" 2>&1; echo "gpu tests exit $? at ${SECONDS}s" >>"$log") &
timeout 270 python3 -m workshop run --device cuda --n 1 --out /tmp/runs >"$out/labs.txt" 2>&1
echo "labs exit $? at ${SECONDS}s" >>"$log"
python3 -m workshop report --out /tmp/runs >>"$out/labs.txt" 2>&1
wait
export PYTHONPATH=/tmp/site:$PWD
left=$((335 - SECONDS))
[ "$left" -gt 40 ] && BENCH_SECONDS=$left bash .device/bench_custom_op.sh /tmp/bench >"$out/bench.out" 2>&1
echo "all done at ${SECONDS}s" >>"$log"
tar czf "$out/runs.tgz" -C /tmp runs bench 2>/dev/null
cat "$log"; tail -12 "$out/labs.txt"; grep -E "passed|failed|FAILED|ERROR" "$out/gpu_tests.txt" | tail -15
grep -i "host time" /tmp/bench/custom_op_bench.md 2>/dev/null | head -2
