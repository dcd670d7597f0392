#!/bin/sh
# One workshop session: run the labs, write the report, then run the test suite on that very run.
#
#   workshop-session [LAB ...]      (in the image; natively: sh docker/session.sh [LAB ...])
# Environment: WORKSHOP_N (processes for the distributed demos, default 2), WORKSHOP_DEVICE (auto|cpu|cuda,
# default auto), PYTHON (default python). With LAB arguments only those labs run, and the tests are skipped:
# the suite checks every lab of the run it follows (tests/conftest.py, WORKSHOP_RUN_DIR).
# Exits non-zero if a lab check or a test failed.
set -u
python=${PYTHON:-python}

before=$(readlink -f results/latest 2>/dev/null || true)
$python -m workshop run --n "${WORKSHOP_N:-2}" --device "${WORKSHOP_DEVICE:-auto}" "$@"
labs_status=$?
run_dir=$(readlink -f results/latest 2>/dev/null || true)
if [ -z "$run_dir" ] || [ "$run_dir" = "$before" ]; then
  echo "workshop-session: the run wrote no run folder (see above)" >&2
  exit $(( labs_status ? labs_status : 2 ))
fi
$python -m workshop report "$run_dir" || labs_status=1

if [ $# -gt 0 ]; then
  echo "workshop-session: ran only $*; the tests check a run of every lab, so they were not run"
  exit $labs_status
fi
echo "workshop-session: testing the run in $run_dir"
WORKSHOP_RUN_DIR="$run_dir" $python -m pytest
tests_status=$?
[ $labs_status -eq 0 ] && [ $tests_status -eq 0 ]
