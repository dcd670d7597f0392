#!/usr/bin/env bash
# Issue 41: the launch sweep with the peers in the same rounds (rows of 2,048-16,384: PER_THREAD; small batches:
# PROGRAMS_PER_SM), then the benchmark again, its host now in 3 rounds after the shapes.
# Usage: bash .device/c2/call.sh REV   (carry .device .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
o=/tmp/o; mkdir -p $o
log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$o/install.log" 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>"$o/install.log" 2>&1
timeout 260 python3 -m tools.softmax_sweep --out $o/sweep --groups "mid rows" "small batches" --peers >"$o/sweep.txt" 2>&1
echo "sweep exit $? at ${SECONDS}s" >>"$log"
timeout 200 python3 -m workshop bench custom_op --out $o/bench >"$o/bench.txt" 2>&1
echo "bench exit $? at ${SECONDS}s" >>"$log"
tar czf "$OUT/all.tgz" -C /tmp o 2>/dev/null
cat "$log"; grep -E "group|: [0-9]+ s|round" "$o/sweep.txt" "$o/bench.txt" | tail -8; grep -A3 "^Host time" $o/bench/custom_op_bench.md | head -5
