#!/usr/bin/env bash
set -uo pipefail
export PYTHONUNBUFFERED=1
d=.device/c4; log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
timeout 200 python3 $d/gaps.py $OUT/gaps.json >$OUT/gaps.log 2>&1
echo "gaps exit $? at ${SECONDS}s" >>"$log"
cat "$log"; grep -v Warn $OUT/gaps.log | cut -c1-900
