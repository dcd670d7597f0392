#!/usr/bin/env bash
# Issue 41: the benchmark timed in interleaved rounds (alone on the GPU), the host ratios measured 5 times over,
# then every lab on CUDA beside the gpu tests, and the benchmark's own tests on CUDA.
# Usage: bash .device/c1/call.sh REV   (carry .device .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
o=/tmp/o; mkdir -p $o
log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$o/install.log" 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>"$o/install.log" 2>&1
python3 -c "import torch, triton, liger_kernel; print(torch.__version__, triton.__version__, 'liger ok')" >>"$log" 2>&1
timeout 240 python3 -m workshop bench custom_op --out $o/bench >"$o/bench.txt" 2>&1
echo "bench exit $? at ${SECONDS}s" >>"$log"
timeout 60 python3 .device/c1/host_repeat.py >"$o/host_repeat.txt" 2>&1
echo "host_repeat exit $? at ${SECONDS}s" >>"$log"
(timeout 200 python3 -m pytest -q -n 4 -p no:cacheprovider -m gpu -rA --junitxml="$o/gpu_tests.xml" tests >"$o/gpu_tests.txt" 2>&1; echo "gpu tests exit $? at ${SECONDS}s" >>"$log"
 timeout 40 python3 -m pytest -q -n 0 -p no:cacheprovider tests/custom_op/test_bench_peers.py tests/tools/test_softmax_sweep.py >"$o/bench_tests.txt" 2>&1; echo "bench tests exit $? at ${SECONDS}s" >>"$log") &
timeout 230 python3 -m workshop run --device cuda --n 1 --out /tmp/runs >"$o/labs.txt" 2>&1
echo "labs exit $? at ${SECONDS}s" >>"$log"
python3 -m workshop report --out /tmp/runs >>"$o/labs.txt" 2>&1
wait
tar czf "$OUT/all.tgz" -C /tmp o runs 2>/dev/null
cat "$log"; tail -3 "$o/bench.txt"; cat "$o/host_repeat.txt" | tail -8; tail -9 "$o/labs.txt"; grep -E "passed|failed|FAILED|ERROR" "$o/gpu_tests.txt" "$o/bench_tests.txt" | tail -8
