#!/bin/bash
# The ctest fixture `postgres_server` of the experiment-database tests: one test server for the
# whole test run instead of one per test process.
#   ctest_fixture.sh start STATE   starts it (start_server.sh) and writes STATE/uri and
#                                  STATE/folder; when no server can run here it writes the reason
#                                  to STATE/skip instead, and the tests skip with it
#   ctest_fixture.sh stop STATE    stops it and removes STATE
# Exit status 0 unless the server failed to start (1, log on stderr).
set -u
action=${1:?usage: ctest_fixture.sh start|stop STATE}
state=${2:?usage: ctest_fixture.sh start|stop STATE}
here=$(dirname "$0")
case "$action" in
  start)
    [ -f "$state/folder" ] && "$here/stop_server.sh" "$(cat "$state/folder")" >/dev/null 2>&1
    rm -rf "$state"
    mkdir -p "$state"
    out=$("$here/start_server.sh" 2>"$state/stderr")
    rc=$?
    if [ $rc = 77 ]; then
      cp "$state/stderr" "$state/skip"
      cat "$state/skip"
      exit 0
    fi
    [ $rc = 0 ] || { cat "$state/stderr" >&2; exit 1; }
    echo "$out" | sed -n 1p >"$state/folder"
    echo "$out" | sed -n 2p >"$state/uri"
    echo "PostgreSQL test server $(cat "$state/uri")"
    ;;
  stop)
    [ -f "$state/folder" ] && "$here/stop_server.sh" "$(cat "$state/folder")"
    rm -rf "$state"
    ;;
  *) echo "ctest_fixture.sh: unknown action $action" >&2; exit 2 ;;
esac
