#!/usr/bin/env bash
# Builds the LibTorch-free test programs (config parser, settings, evaluation, experiment
# database, base) with AddressSanitizer and UndefinedBehaviorSanitizer in build-asan/ and runs
# them with ctest; any finding fails the test that trips it (leaks included).
#
#   tools/sanitize.sh                  # extra arguments go to ctest; ASV_JOBS as elsewhere
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source tools/build_common.sh
build="${ASV_ASAN_BUILD_DIR:-build-asan}"
targets=(asv_base_test asv_parser_test asv_parser_golden_test asv_settings_test asv_eval_test asv_eval_golden_test
         asv_db_test)
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -O1: sanitizer builds at -O2 with debug information are much slower to compile.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASV_WERROR=ON \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
cmake --build "$build" -j"$asv_jobs" --target "${targets[@]}"
# Tests of programs not built here are listed as *_NOT_BUILT.
ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:${UBSAN_OPTIONS:-}" \
  ctest --test-dir "$build" --output-on-failure -j"$asv_jobs" -E _NOT_BUILT "$@"
