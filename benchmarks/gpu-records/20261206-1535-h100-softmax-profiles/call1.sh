#!/usr/bin/env bash
# Issue 41, device call 1: the benchmark (its JSON, table and chart in one tar), Nsight Compute on the missed
# shapes, and the eager-cost measurement. Usage: bash .device/i41/call1.sh   (carry .device and .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1
out=$OUT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >"$out/whl.log" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/ncu.log"
which ncu >>"$out/ncu.log" 2>&1; ncu --version >>"$out/ncu.log" 2>&1
timeout 100 ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv --page details --log-file "$out/ncu-names.csv" python3 .device/i41/ncu_cases.py >>"$out/ncu.log" 2>&1
echo "ncu names exit $? at ${SECONDS}s" >>"$out/ncu.log"
timeout 200 ncu --profile-from-start off --clock-control none --nvtx --print-nvtx-rename kernel \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
  --section MemoryWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__waves_per_multiprocessor,sm__cycles_active.avg,sm__cycles_elapsed.max \
  --csv --page details --log-file "$out/ncu.csv" python3 .device/i41/ncu_cases.py >>"$out/ncu.log" 2>&1
echo "ncu exit $? at ${SECONDS}s" >>"$out/ncu.log"
timeout 60 python3 .device/i41/measure_eager.py "$out/eager.json" >"$out/eager.log" 2>&1
echo "eager exit $? at ${SECONDS}s" >>"$out/ncu.log"
left=$((560 - SECONDS))
if [ "$left" -gt 60 ]; then
  BENCH_SECONDS=$left bash .device/bench_custom_op.sh /tmp/bench >"$out/bench.out" 2>&1
  tar czf "$out/bench.tgz" -C /tmp bench
fi
echo "all done at ${SECONDS}s" >>"$out/ncu.log"
cat "$out/ncu.log"; tail -5 "$out/eager.log"; tail -5 "$out/bench.out"
