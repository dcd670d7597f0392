#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for CI to submit slurm/distributed.sbatch to.
#
#   bash .ci/slurm-up.sh       # as root; Debian's slurm-wlm and munge; about 15 s on a fresh machine
#   bash .ci/slurm-down.sh     # stops the daemons again and removes what this wrote
#
# Installs slurmctld, slurmd, slurm-client (Debian's slurm-wlm) and munge, writes /etc/slurm/slurm.conf for one
# node (this machine, at 127.0.0.1, with all its cores), starts munged, slurmctld and slurmd, and waits until the
# node is idle. Process tracking without cgroups (proctrack/linuxproc, task/none): CI's machine may have no
# writable cgroup tree, and a one-node test needs no confinement. Nothing listens beyond the loopback.
set -euo pipefail
CONF=/etc/slurm/slurm.conf
MARK="# written by .ci/slurm-up.sh"
STATE=/var/lib/slurm   # Debian's package makes it, owned by its user slurm
log() { echo "[slurm-up] $*" >&2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  log "installing Debian's slurm-wlm and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi
if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
  log "$CONF exists and was not written by this script: refusing to replace it"
  exit 1
fi

node=$(hostname -s)
cat >"$CONF" <<CONF
$MARK: a one-node test cluster; .ci/slurm-down.sh removes it
ClusterName=workshop-ci
SlurmctldHost=$node(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$STATE/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=60 State=UP
CONF

# munge: the key Debian's package made, the daemon as its own user
install -d -o munge -g munge -m 0755 /run/munge
pgrep -x munged >/dev/null || runuser -u munge -- /usr/sbin/munged
munge -n | unmunge >/dev/null || { log "munge does not work"; exit 1; }

install -d -o slurm -g slurm "$STATE/slurmctld" "$STATE/slurmd" /var/log/slurm
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd
for _ in $(seq 1 60); do
  state=$(sinfo --noheader --nodes "$node" --format %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.5
done
if [ "$state" != idle ]; then
  log "node $node is '${state:-unknown}', not idle, after 30 s; the daemons' logs:"
  tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2
  exit 1
fi
sinfo
