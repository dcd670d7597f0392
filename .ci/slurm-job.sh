#!/usr/bin/env bash
# CI's Slurm stage, run by .ci/run in the background (in a session of its own, which .ci/run stops on exit):
# slurm/distributed.sbatch submitted as a 2-task job to the one-node cluster of .ci/slurm-up.sh, then the
# distributed tests on that job's run. Needs the venv active and the cluster up.
#
#   bash .ci/slurm-job.sh OUT      # OUT: an empty folder for the job's results and output
set -euo pipefail
out=${1:?"usage: bash .ci/slurm-job.sh OUT (an empty folder for the results and output of the job)"}
# 2 tasks on the one node: two torchrun agents meeting over the c10d rendezvous, 1 process each (world 2)
# (--foreground: timeout stays in this script's process group, which .ci/run stops on exit)
WORKSHOP_OUT=$out WORKSHOP_DEVICE=cpu WORKSHOP_N=2 timeout --foreground 900 \
  sbatch --wait --nodes 1 --ntasks-per-node 2 --output "$out/slurm-%j.out" slurm/distributed.sbatch \
  || { cat "$out"/slurm-*.out; echo "the Slurm job failed" >&2; exit 1; }
grep -E '^job |^distributed: |^the lab |FAILED' "$out"/slurm-*.out
run=$(readlink -f "$out/latest")
head -n 1 "$run/distributed/ddp/log.txt" | grep -F -- '$ srun --ntasks 2 ' | grep -F -- '--rdzv-backend c10d' \
  || { echo "the job's demos were not started as 2 srun tasks meeting over c10d" >&2; exit 1; }
# The distributed tests on the job's run, less the two that start runs of their own (4 processes; Spanish): they
# read no job's run, and the README's test command runs them
WORKSHOP_RUN_DIR=$run python -m pytest -q tests/distributed/test_lab.py \
  --deselect tests/distributed/test_lab.py::test_lab_passes_with_four_processes \
  --deselect tests/distributed/test_lab.py::test_the_lab_runs_in_spanish_and_so_do_its_ranks
