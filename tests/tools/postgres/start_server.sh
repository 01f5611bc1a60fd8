#!/bin/bash
# Starts a PostgreSQL 15 server for tests in a fresh temporary folder: initdb and pg_ctl of
# Debian's postgresql-15 (/usr/lib/postgresql/15/bin), the data folder, socket, log and pid file
# inside that folder, listening on localhost on a free port, with trust authentication for the
# superuser `asv` and fsync off (test data only). As root it runs the server as user `nobody`
# (PostgreSQL refuses to run as root). Prints the folder's path and then the server's connection
# URI (postgresql://asv@localhost:PORT/postgres), one line each; stop_server.sh <folder> stops it.
#
# Usage: start_server.sh [PARENT]   (PARENT: where the temporary folder is made; default $TMPDIR
# or /tmp). Exit status 0 when the server accepts connections; 77 when it cannot run here (a
# binary or the user missing: the reason on stderr); 1 when it failed to start (log on stderr,
# folder removed).
set -u

fail() { echo "start_server.sh: $*" >&2; exit 1; }
bin=${ASV_POSTGRES_BIN:-/usr/lib/postgresql/15/bin}
for tool in initdb pg_ctl pg_isready; do
  [ -x "$bin/$tool" ] || {
    echo "start_server.sh: $bin/$tool missing (apt-get install postgresql; tools/setup.sh installs it)" >&2
    exit 77
  }
done
command -v python3 >/dev/null 2>&1 || { echo "start_server.sh: python3 missing (to find a free port)" >&2; exit 77; }

run_as=()
if [ "$(id -u)" = 0 ]; then
  id nobody >/dev/null 2>&1 || { echo "start_server.sh: as root it needs user nobody to run the server" >&2; exit 77; }
  command -v runuser >/dev/null 2>&1 || { echo "start_server.sh: runuser missing (util-linux)" >&2; exit 77; }
  run_as=(runuser -u nobody --)
fi

parent=${1:-${TMPDIR:-/tmp}}
dir=$(mktemp -d "$parent/asv_postgres.XXXXXX") || fail "cannot make a folder in $parent"
chmod 0700 "$dir"
[ ${#run_as[@]} -gt 0 ] && chown nobody: "$dir"
cleanup_on_failure() {
  [ -f "$dir/server.log" ] && { echo "== $dir/server.log" >&2; tail -n 30 "$dir/server.log" >&2; }
  "$(dirname "$0")/stop_server.sh" "$dir" >/dev/null 2>&1
  exit 1
}

"${run_as[@]}" "$bin/initdb" -D "$dir/data" -U asv -A trust -E UTF8 --locale=C.UTF-8 --no-sync \
  >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; cleanup_on_failure; }

# A free port: the kernel picks one, and a few attempts cover another process taking it first.
for attempt in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo "$port" >"$dir/port"
  if "$(dirname "$0")/pg_ctl.sh" "$dir" start 2>/dev/null; then
    echo "$dir"
    echo "postgresql://asv@localhost:$port/postgres"
    exit 0
  fi
  grep -q "could not bind\|already in use" "$dir/server.log" 2>/dev/null || cleanup_on_failure
done
cleanup_on_failure
