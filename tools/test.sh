#!/usr/bin/env bash
# Builds asvcpp (CPU, Debian's LibTorch) and runs the whole test suite.
#
#   tools/test.sh                  # set-up, build in build/, ctest (all labels)
#   tools/test.sh -L unit          # extra arguments go to ctest
#
# ASV_BUILD_DIR chooses another build folder, ASV_JOBS the parallel jobs (default: one per core).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source tools/build_common.sh
tools/setup.sh
build="${ASV_BUILD_DIR:-build}"
asv_configure_cpu "$build"
cmake --build "$build" -j"$asv_jobs"
ctest --test-dir "$build" --output-on-failure -j"$asv_jobs" "$@"
