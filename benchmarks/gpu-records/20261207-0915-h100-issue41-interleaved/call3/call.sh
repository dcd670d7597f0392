#!/usr/bin/env bash
# Issue 41: Nsight Compute on ours, Liger's and Inductor's softmax kernels at the shapes where a peer finished first.
set -uo pipefail
export PYTHONUNBUFFERED=1
d=.device/c3; log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
avail=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
pick() { for m in "$@"; do echo "$avail" | grep -qx "${m%.*}" && printf '%s,' "$m"; done; }
metrics=$(pick gpu__time_duration.sum smsp__inst_executed.sum launch__registers_per_thread launch__grid_size \
  launch__block_size launch__occupancy_limit_registers sm__warps_active.avg.pct_of_peak_sustained_active \
  dram__throughput.avg.pct_of_peak_sustained_elapsed dram__bytes_read.sum dram__bytes_write.sum \
  smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio sm__cycles_elapsed.avg)
metrics=${metrics%,}
echo "metrics: $metrics" >>"$log"
timeout 300 ncu --profile-from-start off --metrics "$metrics" --csv --page raw --print-units base \
  --log-file /tmp/ncu.csv python3 $d/ncu_kernels.py /tmp/labels.json >/tmp/ncu_app.log 2>&1
echo "ncu exit $? at ${SECONDS}s" >>"$log"
python3 $d/summarize.py /tmp/ncu.csv /tmp/labels.json >"$OUT/ncu_kernels.csv" 2>>"$log"
cp /tmp/ncu.csv /tmp/labels.json /tmp/ncu_app.log $OUT/ 2>/dev/null
cat "$log"; tail -3 /tmp/ncu_app.log; cat "$OUT/ncu_kernels.csv"
