#!/usr/bin/env bash
# Tear down what .ci/slurm-up.sh started: cancel any job left, stop slurmd, slurmctld and munged (each by the
# pid it recorded), remove the config it wrote. Safe to run twice, or after a failed start.
set -uo pipefail
CONF=/etc/slurm/slurm.conf
command -v scancel >/dev/null && [ -e "$CONF" ] && scancel --full --quiet --user root 2>/dev/null
stop() {  # stop the daemon whose pid is in $2, waiting up to 10 s for it to go
  local name=$1 pid
  pid=$(cat "$2" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  echo "[slurm-down] $name ($pid) did not stop; killing it" >&2
  kill -9 "$pid" 2>/dev/null
}
stop slurmd /run/slurmd.pid
stop slurmctld /run/slurmctld.pid
stop munged /run/munge/munged.pid
# Their pid files outlive them; a stale /run/slurmctld.pid makes the package's own removal call scancel, which fails
rm -f /run/slurmd.pid /run/slurmctld.pid
grep -qsF "# written by .ci/slurm-up.sh" "$CONF" && rm -f "$CONF"
rm -rf /var/lib/slurm/slurmctld/* /var/lib/slurm/slurmd/*
echo "[slurm-down] stopped"
