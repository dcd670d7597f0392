#!/usr/bin/env bash
# Issue 41, one device call for the two missing measured reasons (each step capped, the whole within ~470 s):
#  1. host_probe2.py: the step at (64, 600) in several kinds of process (fresh, after the benchmark's imports, after
#     its sweeps, inside `python -m workshop bench custom_op`, the custom_op lab, ...), each a fresh process, one at
#     a time, nothing else running on the machine;
#  2. replay_probe.py: ours, copies of our kernels with Liger's cache hints (and others), and Liger, timed as the
#     benchmark times them (CUDA-graph replay), with the L2 scrubbed, and over 4x the rotation; its kernels
#     compiled first, the six shapes in parallel;
#  3. ncu on the benchmark's graph replay with --cache-control none: whole graphs (--graph-profiling graph), then
#     each kernel node (--graph-profiling node) with the time left.
# Usage: bash .device/i41r/call.sh REV   (carry .device and .whl)
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
out=$OUT
d=.device/i41r
log=$out/call.log
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader; nproc; } >"$log"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/tmp/install.log 2>&1
python3 -m pip install -q --no-deps --no-build-isolation -e . >>/tmp/install.log 2>&1
export PYTHONPATH=/tmp/site:$PWD:$PWD/$d
python3 -c "import sys, torch, triton, liger_kernel; print(sys.version.split()[0], torch.__version__, triton.__version__)" >>"$log" 2>&1
echo "installed at ${SECONDS}s" >>"$log"

timeout 230 python3 $d/host_probe2.py all "$out/host_probe2.json" \
  fresh,bench_imports,cli_bench,lab,fresh_frozen_like_lab,bench_imports_frozen,fresh_busy_cpus,after_sweeps,bench_imports_inductor \
  >"$out/host_probe2.log" 2>&1
echo "host probe exit $? at ${SECONDS}s" >>"$log"

for i in 0 1 2 3 4 5; do
  timeout 60 python3 $d/replay_probe.py warm $i >/tmp/warm$i.log 2>&1 &
done
wait
echo "warm done at ${SECONDS}s" >>"$log"
timeout 90 python3 $d/replay_probe.py time "$out/replay_probe.json" >"$out/replay_probe.log" 2>&1
echo "replay probe exit $? at ${SECONDS}s" >>"$log"

avail=$(ncu --query-metrics --chip gh100 2>/dev/null | awk '{print $1}')
pick() { for m in "$@"; do echo "$avail" | grep -qx "${m%.*}" && printf '%s,' "$m"; done; }
metrics=$(pick gpu__time_duration.sum dram__bytes_read.sum dram__bytes_write.sum lts__t_sectors_op_read.sum \
  lts__t_sectors_op_write.sum lts__t_sectors_op_read_lookup_hit.sum lts__t_sectors_op_write_lookup_hit.sum \
  lts__t_sector_op_read_hit_rate.pct lts__t_sector_op_write_hit_rate.pct)
metrics=${metrics%,}
[ -z "$metrics" ] && metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_op_write_hit_rate.pct
echo "ncu metrics: $metrics" >>"$log"
for mode in graph node; do
  left=$((470 - SECONDS))
  [ "$left" -gt 80 ] && left=80
  if [ "$left" -gt 30 ]; then
    timeout "$left" ncu --profile-from-start off --graph-profiling $mode --cache-control none --clock-control none \
      --metrics "$metrics" --csv --page raw --print-units base --log-file /tmp/ncu_$mode.csv \
      python3 $d/ncu_replay.py /tmp/labels_$mode.json >/tmp/ncu_${mode}_app.log 2>&1
    echo "ncu $mode exit $? at ${SECONDS}s" >>"$log"
    python3 $d/ncu_raw_summary.py /tmp/ncu_$mode.csv /tmp/labels_$mode.json $mode >"$out/ncu_$mode.csv" 2>>"$log"
  fi
done
grep -h "passes" /tmp/ncu_graph.csv /tmp/ncu_node.csv 2>/dev/null | sort | uniq -c | head -5 >>"$log"
labres=$(cd /tmp && ls -d probe_lab/*/custom_op 2>/dev/null | head -1)
tar czf "$out/raw.tgz" -C /tmp install.log probe_bench/custom_op_bench.json probe_bench/custom_op_bench.md ${labres:+$labres/result.json $labres/summary.md} warm0.log warm1.log warm2.log warm3.log warm4.log warm5.log \
  $(cd /tmp && ls ncu_*_app.log labels_*.json ncu_graph.csv ncu_node.csv 2>/dev/null) 2>/dev/null
echo "all done at ${SECONDS}s" >>"$log"
cat "$log"
grep -v Warn "$out/host_probe2.log" | cut -c1-600
tail -40 "$out/replay_probe.log" | cut -c1-150
cat "$out/ncu_graph.csv" "$out/ncu_node.csv" 2>/dev/null
