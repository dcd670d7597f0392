#!/usr/bin/env bash
# Issue 41: Inductor's small backward, taken apart (small_bwd.py): timing in balanced rounds, the code, Nsight Compute.
set -uo pipefail
export PYTHONUNBUFFERED=1
d=.device/sb; log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps .whl/liger_kernel-0.8.5-py3-none-any.whl >>/tmp/install.log 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >>"$log" 2>&1

timeout 120 python3 $d/small_bwd.py code $OUT >$OUT/code.log 2>&1; echo "code exit $? at ${SECONDS}s" >>"$log"
timeout 200 python3 $d/small_bwd.py time $OUT/small_bwd.json >$OUT/time.log 2>&1; echo "time exit $? at ${SECONDS}s" >>"$log"
avail=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
pick() { for m in "$@"; do echo "$avail" | grep -qx "${m%.*}" && printf '%s,' "$m"; done; }
metrics=gpu__time_duration.sum,launch__registers_per_thread,launch__grid_size,launch__block_size,dram__bytes_read.sum,$(pick smsp__inst_executed.sum launch__registers_per_thread launch__grid_size \
  launch__block_size sm__cycles_elapsed.avg smsp__cycles_active.avg sm__warps_active.avg.pct_of_peak_sustained_active \
  dram__bytes_read.sum dram__bytes_write.sum dram__throughput.avg.pct_of_peak_sustained_elapsed \
  smsp__average_warp_latency_per_inst_issued.ratio \
  smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio \
  smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio \
  smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio \
  smsp__average_warps_issue_stalled_wait_per_issue_active.ratio \
  smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio \
  smsp__average_warps_issue_stalled_drain_per_issue_active.ratio \
  smsp__sass_inst_executed_op_global_ld.sum smsp__sass_inst_executed_op_global_st.sum \
  smsp__sass_inst_executed_op_shared_ld.sum smsp__sass_inst_executed_op_shared_st.sum \
  l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum \
  smsp__thread_inst_executed_per_inst_executed.ratio)
metrics=${metrics%,}
echo "metrics: $metrics" >>"$log"
timeout 200 ncu --profile-from-start off --metrics "$metrics" --csv --page raw --print-units base \
  --log-file $OUT/ncu_raw.csv python3 $d/small_bwd.py ncu $OUT/labels.json >$OUT/ncu_app.log 2>&1
echo "ncu exit $? at ${SECONDS}s" >>"$log"
python3 $d/summarize.py $OUT/ncu_raw.csv $OUT/labels.json "$metrics" >"$OUT/ncu_summary.csv" 2>>"$log" || true
gzip -f $OUT/ncu_raw.csv
cat "$log"; cat $OUT/code.log; cat $OUT/time.log | tail -12; tail -2 $OUT/ncu_app.log; cat $OUT/ncu_summary.csv
