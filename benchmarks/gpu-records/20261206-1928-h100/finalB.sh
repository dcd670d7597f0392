#!/usr/bin/env bash
# The session's last GPU call, on the merged code: gpu-record --suite gpu (every lab on CUDA, then the gpu tests);
# beside it every test of tests/ops and tests/custom_op on CUDA (not only the gpu-marked); then issue 41's
# small-batch sweep and small shapes with the time left.  Usage: bash .device/finalB.sh REV  (carry .device, .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
out=$OUT
log=$out/finalB.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >>"$log" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1
(PYTHONPATH=/tmp/site:$PWD timeout 200 python3 -m pytest -q -n 4 -p no:cacheprovider tests/ops tests/custom_op >"$out/ops_tests.txt" 2>&1; echo "ops+custom_op tests exit $? at ${SECONDS}s" >>"$log") &
timeout 450 python3 -m tools gpu-record --suite gpu --out /tmp/rec >"$out/gpu-record.txt" 2>&1
echo "gpu-record exit $? at ${SECONDS}s" >>"$log"
wait
tar czf "$out/record.tgz" -C /tmp rec
export PYTHONPATH=/tmp/site:$PWD
left=$((570 - SECONDS))
if [ "$left" -gt 30 ]; then
  timeout "$left" python3 -m tools.softmax_sweep --out /tmp/sweep --groups "small batches" >"$out/sweep.txt" 2>&1
  echo "sweep exit $? at ${SECONDS}s" >>"$log"
fi
left=$((585 - SECONDS))
[ "$left" -gt 20 ] && timeout "$left" python3 .device/i41/small_bench.py /tmp/small.json >"$out/small.txt" 2>&1
echo "all done at ${SECONDS}s" >>"$log"
mkdir -p /tmp/pack && cp /tmp/sweep/sweep.json /tmp/small.json "$out"/*.txt /tmp/pack/ 2>/dev/null
tar czf "$out/pack.tgz" -C /tmp pack 2>/dev/null
cat "$log"; tail -12 "$out/gpu-record.txt"; tail -4 "$out/ops_tests.txt"; grep -v Warn "$out/sweep.txt" | tail -34
grep -v Warn "$out/small.txt" | tail -8
