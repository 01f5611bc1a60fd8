#!/bin/bash
# Tears down a cluster of start_cluster.sh: cancels its jobs, stops slurmd, slurmctld and munged
# (the pids in their pid files; each is waited for up to 10 s, then killed) and removes the folder.
# Usage: stop_cluster.sh FOLDER. Only a folder made by start_cluster.sh (it has slurm.conf) is removed.
set -u
dir=${1:?usage: stop_cluster.sh FOLDER}
[ -f "$dir/slurm.conf" ] || { echo "stop_cluster.sh: $dir is not a cluster folder" >&2; exit 1; }
PATH="$PATH:/usr/sbin"
SLURM_CONF="$dir/slurm.conf" scancel --quiet --full --user=root >/dev/null 2>&1 || true
stop() {
  local pid_file=$1
  [ -f "$pid_file" ] || return 0
  local pid
  pid=$(cat "$pid_file")
  [ -n "$pid" ] || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null
}
stop "$dir/slurmd.pid"
stop "$dir/slurmctld.pid"
stop "$dir/munge/munged.pid"
rm -rf "$dir"
