#!/usr/bin/env bash
# Fuzzes the config reader (parse, check, resolve, render: tests/parser/fuzz/config_fuzz.cc) with
# libFuzzer for a bounded time, starting from the kept corpus tests/parser/fuzz_corpus/. Builds
# with Debian's clang, AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/ (only the
# LibTorch-free parser libraries). Exits non-zero when an input crashes, trips a sanitizer,
# breaks an invariant, or takes more than 10 s; the input is saved under build-fuzz/artifacts/
# (add a small version of it to tests/parser/fuzz_corpus/ once fixed, so ctest replays it).
#
#   tools/fuzz_configs.sh [seconds]       # default 60; ASV_FUZZ_BUILD_DIR, ASV_JOBS as elsewhere
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source tools/build_common.sh
seconds="${1:-60}"
build="${ASV_FUZZ_BUILD_DIR:-build-fuzz}"
command -v clang++ >/dev/null || { echo "fuzz_configs: clang++ not found (tools/setup.sh installs it)" >&2; exit 1; }
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASV_FUZZ=ON \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build" -j"$asv_jobs" --target asv_config_fuzzer
# New inputs go to a scratch corpus; the kept one is only read.
rm -rf "$build/corpus" "$build/artifacts"
mkdir -p "$build/corpus" "$build/artifacts"
echo "fuzz_configs: fuzzing the config reader for ${seconds} s"
status=0
ASAN_OPTIONS="detect_leaks=1:${ASAN_OPTIONS:-}" UBSAN_OPTIONS="print_stacktrace=1:${UBSAN_OPTIONS:-}" \
  "$build/tests/parser/asv_config_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -print_final_stats=1 -artifact_prefix="$build/artifacts/" \
  -dict=tests/parser/fuzz/config.dict "$build/corpus" tests/parser/fuzz_corpus 2>"$build/fuzz.log" || status=$?
tail -n 25 "$build/fuzz.log"
if [ "$status" -ne 0 ]; then
  echo "fuzz_configs: FAILED (status $status); inputs in $build/artifacts/:" >&2
  ls -l "$build/artifacts/" >&2
  exit 1
fi
echo "fuzz_configs: no crash in ${seconds} s"
