#!/bin/bash
# Stops the test server that start_server.sh started in FOLDER (fast shutdown: open connections
# are ended) and removes the folder. Usage: stop_server.sh FOLDER. Exit status 0 when the folder
# is gone.
set -u
dir=${1:?usage: stop_server.sh FOLDER}
case "$(basename "$dir")" in asv_postgres.*) ;; *) echo "stop_server.sh: $dir is not a start_server.sh folder" >&2; exit 1 ;; esac
[ -f "$dir/data/postmaster.pid" ] && "$(dirname "$0")/pg_ctl.sh" "$dir" stop 2>/dev/null
rm -rf "$dir"
[ ! -e "$dir" ]
