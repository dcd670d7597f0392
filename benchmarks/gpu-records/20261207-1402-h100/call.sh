#!/usr/bin/env bash
# The GPU record of the merged tree: every lab on CUDA beside the gpu tests, the benchmark's own tests on CUDA,
# then, with the GPU otherwise idle, the custom_op benchmark and the small-backward probe's timing
# (.device/sb/small_bwd.py time). Each step writes under $OUT as it ends, so a call cut short keeps what finished.
# Usage: bash .device/final2/call.sh REV   (carry .device .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
o=$OUT; mkdir -p $o/sb
log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
date -u +%H:%M:%S >>"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
python3 -c "import torch, triton, liger_kernel; print(torch.__version__, triton.__version__, 'liger ok')" >>"$log" 2>&1
(timeout 200 python3 -m pytest -q -n 4 -p no:cacheprovider -m gpu -rA --junitxml="$o/gpu_tests.xml" tests >"$o/gpu_tests.txt" 2>&1; echo "gpu tests exit $? at ${SECONDS}s" >>"$log") &
timeout 230 python3 -m workshop run --device cuda --n 1 --out /tmp/runs >"$o/labs.txt" 2>&1
echo "labs exit $? at ${SECONDS}s" >>"$log"
python3 -m workshop report --out /tmp/runs >>"$o/labs.txt" 2>&1
wait
tar czf "$OUT/runs.tgz" -C /tmp runs 2>/dev/null
timeout 40 python3 -m pytest -q -n 0 -p no:cacheprovider tests/custom_op/test_bench_peers.py tests/tools/test_softmax_sweep.py >"$o/bench_tests.txt" 2>&1; echo "bench tests exit $? at ${SECONDS}s" >>"$log"
timeout 200 python3 -m workshop bench custom_op --out $o/bench >"$o/bench.txt" 2>&1
echo "bench exit $? at ${SECONDS}s" >>"$log"
timeout 60 python3 .device/sb/small_bwd.py time $o/sb/small_bwd.json >$o/sb/time.log 2>&1; echo "probe time exit $? at ${SECONDS}s" >>"$log"
cat "$log"; tail -9 "$o/labs.txt"; grep -E "passed|failed|FAILED|ERROR" "$o/gpu_tests.txt" "$o/bench_tests.txt" | tail -8; grep -E "Targets met|^- " $o/bench/custom_op_bench.md | head -30; grep -A3 "^Host time" $o/bench/custom_op_bench.md | cut -c1-300; cat $o/sb/time.log
