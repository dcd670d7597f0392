#!/bin/sh
# One workshop session: run the labs (the run writes its REPORT.md and names it), then run the tests that read a
# run (marked lab_run by tests/conftest.py, less the slow ones) on that very run.
#
#   workshop-session [LAB ...]      (in the image; natively: sh docker/session.sh [LAB ...])
# Environment: WORKSHOP_N (processes for the distributed demos, default 2), WORKSHOP_DEVICE (auto|cpu|cuda,
# default auto), PYTHON (default python). With LAB arguments only those labs run, and the tests are skipped:
# the suite checks every lab of the run it follows (tests/conftest.py, WORKSHOP_RUN_DIR).
# Exits non-zero if a lab check or a test failed; 130/143 (and nothing more runs) if it was interrupted.
#
# SIGINT/SIGTERM are passed on to the step that is running, which stops cleanly (an interrupted run is marked
# so in its manifest). As the container's PID 1 this shell would otherwise ignore them (`docker stop`, Ctrl-C
# in `docker compose up`), and a shell waits for a foreground command before running a trap: so each step runs
# in the background and the shell waits for it.
set -u
python=${PYTHON:-python}
step=
# A message in the workshop's language (WORKSHOP_LANG, the locale): the text is the package's (workshop/i18n/say.py)
say() { $python -m workshop.i18n.say "$@"; }
trap '[ -n "$step" ] && kill -TERM "$step" 2>/dev/null' INT TERM

# Run "$@" as the current step; its exit status, even when a signal interrupted the shell's wait.
run_step() {
  "$@" &
  step=$!
  wait "$step"
  status=$?
  while kill -0 "$step" 2>/dev/null; do # the wait was cut short by a signal: wait for the step itself
    wait "$step"
    status=$?
  done
  step=
  return $status
}

stopped() { [ "$1" -eq 129 ] || [ "$1" -eq 130 ] || [ "$1" -eq 143 ]; }

before=$(readlink results/latest 2>/dev/null || true)
# `--` before the labs: a value such as --help is a lab name here, never an option of `workshop run`.
run_step $python -m workshop run --n "${WORKSHOP_N:-2}" --device "${WORKSHOP_DEVICE:-auto}" -- "$@"
labs_status=$?
if stopped $labs_status; then
  say session-interrupted >&2
  exit $labs_status
fi
latest=$(readlink results/latest 2>/dev/null || true)
if [ -z "$latest" ] || [ "$latest" = "$before" ]; then
  say session-no-run >&2
  exit $(( labs_status ? labs_status : 2 ))
fi
run_dir="results/$latest" # relative: the same path in the container (/workshop) and on the host

if [ $# -gt 0 ]; then
  say session-some-labs "labs=$*"
  exit $labs_status
fi
say session-testing "run=$run_dir"
# Only the tests that read a run: the rest never look at it (`docker compose run --rm test`, the whole suite,
# runs them all); the slow ones are the mutation suites and runs with other process counts.
run_step env WORKSHOP_RUN_DIR="$run_dir" $python -m pytest -m "lab_run and not slow" --durations=10
tests_status=$?
stopped $tests_status && exit $tests_status
[ $labs_status -eq 0 ] && [ $tests_status -eq 0 ]
