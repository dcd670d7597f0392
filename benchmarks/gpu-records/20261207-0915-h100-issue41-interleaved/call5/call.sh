#!/usr/bin/env bash
# Issue 41: ours and Liger after each predecessor; then the benchmark with balanced orders.
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
d=.device/c5; log=$OUT/call.log; o=/tmp/o; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
timeout 150 python3 $d/predecessor.py $o/predecessor.json >$o/predecessor.log 2>&1
echo "predecessor exit $? at ${SECONDS}s" >>"$log"
timeout 220 python3 -m workshop bench custom_op --out $o/bench >"$o/bench.txt" 2>&1
echo "bench exit $? at ${SECONDS}s" >>"$log"
tar czf "$OUT/all.tgz" -C /tmp o 2>/dev/null
cat "$log"; grep -v -i warn $o/predecessor.log | cut -c1-200; grep "Targets met" $o/bench/custom_op_bench.md; grep -A2 "^Host time" $o/bench/custom_op_bench.md | cut -c1-400
