#!/usr/bin/env bash
# Builds asvcpp (CPU, Debian's LibTorch) and runs the whole test suite.
#
#   tools/test.sh                  # set-up, build in build/, ctest (all labels)
#   tools/test.sh -L unit          # extra arguments go to ctest
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tools/setup.sh
build="${ASV_BUILD_DIR:-build}"
jobs="${ASV_JOBS:-2}"
# -g1 (line tables: backtraces and sanitizer reports keep file:line) instead of -g: the LibTorch
# files compile in about 60 % of the time; configure your own build for full debug information.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASV_WERROR=ON -DASV_WITH_LIBAV=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" --output-on-failure -j"$jobs" "$@"
