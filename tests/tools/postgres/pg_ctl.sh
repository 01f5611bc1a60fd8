#!/bin/bash
# Stops or starts again the test server of a start_server.sh folder, keeping its data: the
# reliability tests stop the server in the middle of a run and start it again. pg_ctl runs as the
# folder's owner (nobody when start_server.sh ran as root), with the options start_server.sh gave.
#
# Usage: pg_ctl.sh FOLDER start|stop. Exit status 0 when the server is up (start) or down (stop).
set -u
dir=${1:?usage: pg_ctl.sh FOLDER start|stop}
action=${2:?usage: pg_ctl.sh FOLDER start|stop}
bin=${ASV_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
run_as=()
[ "$(id -u)" = 0 ] && run_as=(runuser -u nobody --)
case "$action" in
  start)
    port=$(cat "$dir/port") || exit 1
    exec "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-p $port -k $dir -c listen_addresses=localhost -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=100" \
      start >/dev/null
    ;;
  stop) exec "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m fast -w -t 30 stop >/dev/null ;;
  *) echo "pg_ctl.sh: unknown action $action" >&2; exit 2 ;;
esac
