#!/usr/bin/env bash
# The session's one GPU call for the merged code: the README's install, gpu-record --suite gpu (every lab on CUDA,
# then the gpu tests), then issue 41's step by difference and the one-pass tile sweep with the time left.
# Usage: bash .device/final3.sh GIT_REVISION   (carry .device and .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
out=$OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >"$out/whl.log" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1
timeout 330 python3 -m tools gpu-record --suite gpu --out /tmp/rec >"$out/gpu-record.log" 2>&1
echo "gpu-record exit $? at ${SECONDS}s" >>"$out/gpu-record.log"
tar czf "$out/record.tgz" -C /tmp rec
export PYTHONPATH=/tmp/site:$PWD
timeout 45 python3 .device/i41/step_parts.py "$out/step_parts.json" >"$out/step_parts.log" 2>&1
echo "step_parts exit $? at ${SECONDS}s" >>"$out/gpu-record.log"
left=$((470 - SECONDS))
[ "$left" -gt 30 ] && timeout "$left" python3 .device/i41/tile_sweep.py "$out/tile_sweep.json" >"$out/tile_sweep.log" 2>&1
echo "all done at ${SECONDS}s" >>"$out/gpu-record.log"
tail -30 "$out/gpu-record.log"; cat "$out/step_parts.log" | grep -v Warn | tail -20; grep -v Warn "$out/tile_sweep.log" | tail -80
