#!/usr/bin/env bash
# The custom_op benchmark on main after cop5 moved its imports (1402 ran it at d4ea153): the whole benchmark,
# the GPU otherwise idle. Usage: bash .device/final5/call.sh REV   (carry .device .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
date -u +%H:%M:%S >>"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
timeout 200 python3 -m workshop bench custom_op --out /tmp/bench >"$OUT/bench.txt" 2>&1
echo "bench exit $? at ${SECONDS}s" >>"$log"
tar czf "$OUT/bench.tgz" -C /tmp bench 2>/dev/null
cat "$log"; grep -E "Targets met|ours beats" /tmp/bench/custom_op_bench.md | cut -c1-400; grep "^Host time" /tmp/bench/custom_op_bench.md | cut -c1-400
