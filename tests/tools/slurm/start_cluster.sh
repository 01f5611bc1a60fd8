#!/bin/bash
# Starts a one-node Slurm cluster on localhost, as root, in a fresh temporary folder: munged with
# a generated key, slurmctld and slurmd from a generated slurm.conf, every socket, pid file, log
# and state folder inside that folder. Waits until `sinfo` shows the node idle, then prints the
# folder's path (stdout, one line); the client commands (sbatch, squeue, scontrol, scancel) reach
# the cluster with SLURM_CONF=<folder>/slurm.conf. stop_cluster.sh <folder> tears it down.
#
# Usage: start_cluster.sh [PARENT]   (PARENT: where the temporary folder is made; default $TMPDIR
# or /tmp). Exit status 0 when the cluster is up; 77 when it cannot run here (not root, a binary
# missing: the reason on stderr); 1 when it failed to start (logs on stderr, folder removed).
# Accounting is off; final job states and reasons go to <folder>/jobcomp.txt (jobcomp/filetxt).
set -u

fail() { echo "start_cluster.sh: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then echo "start_cluster.sh: needs root (slurmd runs jobs as their users)" >&2; exit 77; fi
for tool in munged slurmctld slurmd sbatch sinfo squeue scontrol scancel srun; do
  command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || {
    echo "start_cluster.sh: $tool missing (apt-get install slurm-wlm munge; tools/setup.sh installs them)" >&2
    exit 77
  }
done
PATH="$PATH:/usr/sbin"

parent=${1:-${TMPDIR:-/tmp}}
dir=$(mktemp -d "$parent/asv_slurm.XXXXXX") || fail "cannot make a folder in $parent"
chmod 0700 "$dir"
mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
chmod 0700 "$dir/munge"
cleanup_on_failure() {
  for log in "$dir"/log/*.log; do [ -f "$log" ] && { echo "== $log" >&2; tail -n 30 "$log" >&2; }; done
  "$(dirname "$0")/stop_cluster.sh" "$dir" >/dev/null 2>&1
  exit 1
}

# munged: a random key, own socket, pid, seed and log files.
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none || cleanup_on_failure
chmod 0400 "$dir/munge/munge.key"
munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --seed-file="$dir/munge/munged.seed" \
  --log-file="$dir/log/munged.log" >"$dir/log/munged.out" 2>&1 || cleanup_on_failure

# Ports from the pid, so that two clusters of concurrent test runs do not collide.
base=$((20000 + ($$ % 2000) * 2))
cpus=$(nproc)
memory=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
cat >"$dir/slurm.conf" <<CONF
ClusterName=asvtest
SlurmctldHost=localhost
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SwitchType=switch/none
ReturnToService=2
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/jobcomp.txt
KillWait=10
MinJobAge=600
SchedulerParameters=sched_interval=1
NodeName=localhost CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
export SLURM_CONF="$dir/slurm.conf"
slurmctld -i -f "$SLURM_CONF" >"$dir/log/slurmctld.out" 2>&1 || cleanup_on_failure
slurmd -f "$SLURM_CONF" >"$dir/log/slurmd.out" 2>&1 || cleanup_on_failure

for _ in $(seq 1 60); do
  state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1)
  if [ "$state" = idle ]; then
    echo "$dir"
    exit 0
  fi
  sleep 0.5
done
echo "start_cluster.sh: the node is not idle after 30 s (sinfo: '${state:-}')" >&2
cleanup_on_failure
