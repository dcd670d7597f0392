#!/usr/bin/env bash
# Issue 41: the launch sweep again, its settings and the peers now in balanced orders (timed_in_rounds).
set -uo pipefail
export PYTHONUNBUFFERED=1
log=$OUT/call.log; o=/tmp/o; mkdir -p $o
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
timeout 300 python3 -m tools.softmax_sweep --out $o/sweep --groups "mid rows" "small batches" "short-row backward" --peers >"$o/sweep.txt" 2>&1
echo "sweep exit $? at ${SECONDS}s" >>"$log"
tar czf "$OUT/all.tgz" -C /tmp o 2>/dev/null
cat "$log"; grep -v "^peer" $o/sweep.txt | cut -c1-150
