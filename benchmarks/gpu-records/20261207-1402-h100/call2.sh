#!/usr/bin/env bash
# The labs of d4ea153 on CUDA with the GPU otherwise idle: call 1 (final2) ran them beside the gpu tests and its
# 230 s limit stopped the last lab (distributed). Resume that run where the machine kept it, else run them all.
set -uo pipefail
export PYTHONUNBUFFERED=1 WORKSHOP_GIT_REVISION=$1
log=$OUT/call.log
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$log"
python3 -c "import workshop" 2>/dev/null || python3 -m pip install -q --no-deps --no-build-isolation -e . >/tmp/install.log 2>&1
run=$(ls -d /tmp/runs/2026* 2>/dev/null | tail -1)
if [ -n "$run" ]; then echo "resuming $run" >>"$log"; timeout 400 python3 -m workshop run --resume "$run" --out /tmp/runs >"$OUT/labs.txt" 2>&1
else echo "fresh run" >>"$log"; timeout 400 python3 -m workshop run --device cuda --n 1 --out /tmp/runs >"$OUT/labs.txt" 2>&1; fi
echo "labs exit $? at ${SECONDS}s" >>"$log"
python3 -m workshop report --out /tmp/runs >>"$OUT/labs.txt" 2>&1
tar czf "$OUT/runs.tgz" -C /tmp runs 2>/dev/null
cat "$log"; tail -12 "$OUT/labs.txt"
