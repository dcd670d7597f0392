#!/usr/bin/env bash
# Issue 41, device call C on main (a94e359): the host probe (why torch's step is slow inside the benchmark), the whole
# benchmark, and Nsight Compute at the mid and small shapes where a peer wins.
# Usage: bash .device/i41b/callC.sh   (carry .device and .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1
out=$OUT
log=$out/callC.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >>"$log" 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$out/install.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >>"$log" 2>&1
timeout 150 python3 .device/i41b/host_probe.py all "$out/host_probe.json" >"$out/host_probe.log" 2>&1
echo "host probe exit $? at ${SECONDS}s" >>"$log"
BENCH_SECONDS=200 bash .device/bench_custom_op.sh /tmp/bench >"$out/bench.out" 2>&1
echo "bench done at ${SECONDS}s" >>"$log"
left=$((560 - SECONDS))
timeout "$left" ncu --profile-from-start off --clock-control none --nvtx \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis \
  --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum,launch__waves_per_multiprocessor \
  --csv --page details --log-file /tmp/ncu_mid.csv python3 .device/i41b/ncu_mid.py >"$out/ncu_mid.log" 2>&1
echo "ncu exit $? at ${SECONDS}s" >>"$log"
python3 benchmarks/gpu-records/20261206-1535-h100-softmax-profiles/ncu_summary.py /tmp/ncu_mid.csv >"$out/ncu-mid.csv" 2>>"$log"
gzip -c /tmp/ncu_mid.csv >"$out/ncu_mid_details.csv.gz"
tar czf "$out/bench.tgz" -C /tmp bench 2>/dev/null
tar czf "$out/all.tgz" -C "$out" --exclude all.tgz . 2>/dev/null
cat "$log"; grep -v Warn "$out/host_probe.log" | cut -c1-600; tail -5 "$out/bench.out"; tail -3 "$out/ncu_mid.log"; wc -l "$out/ncu-mid.csv"
