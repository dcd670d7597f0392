#!/usr/bin/env bash
# Issue 41, session 2026-12-06 night, device call A on main + the backward tile (04354c6): the tile measured in one
# process (sweep group "short-row backward"), the whole benchmark, the small shapes, the custom_op lab on CUDA and
# the gpu tests of ops and custom_op.  Usage: bash .device/i41/callA.sh   (carry .device and .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1
out=$OUT
log=$out/callA.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >>"$log" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >>"$log" 2>&1
timeout 150 python3 -m pytest -q -n 8 -p no:cacheprovider -m gpu tests/ops tests/custom_op >"$out/gpu_tests.log" 2>&1 &
tests=$!
timeout 90 python3 -m workshop.labs.custom_op.bench.sweep --out /tmp/sweep --groups "short-row backward" >"$out/sweep.log" 2>&1
echo "sweep exit $? at ${SECONDS}s" >>"$log"
wait $tests; echo "gpu tests exit $? at ${SECONDS}s" >>"$log"
timeout 120 python3 -m workshop run custom_op --device cuda --out /tmp/runs >"$out/lab.log" 2>&1
echo "custom_op lab exit $? at ${SECONDS}s" >>"$log"
BENCH_SECONDS=150 bash .device/bench_custom_op.sh /tmp/bench >"$out/bench.out" 2>&1
echo "bench done at ${SECONDS}s" >>"$log"
timeout 60 python3 .device/i41/small_bench.py /tmp/small.json >"$out/small.log" 2>&1
echo "small exit $? at ${SECONDS}s" >>"$log"
cp /tmp/sweep/sweep.json /tmp/small.json "$out/" 2>/dev/null
tar czf "$out/bench.tgz" -C /tmp bench 2>/dev/null
tar czf "$out/runs.tgz" -C /tmp runs 2>/dev/null
cat "$log"; tail -3 "$out/gpu_tests.log"; grep -v Warn "$out/sweep.log" | tail -20; tail -15 "$out/lab.log"
tail -8 "$out/bench.out"; grep -v Warn "$out/small.log" | tail -8
