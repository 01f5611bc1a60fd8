// Where the repository, the build folder and the programs that tests start are.
//
// The paths are compiled into one small source (tests/build_paths.cc), not into every test
// source: a test source is then the same text in every clone and build folder, and the compiler
// cache (cmake/AsvCcache.cmake) serves it to a fresh clone. The macros read like the compile
// definitions they replace.
#pragma once

namespace asv::testing {

/// The repository root, absolute (CMake's PROJECT_SOURCE_DIR).
const char* SourceDir();
/// The build folder, absolute (CMake's PROJECT_BINARY_DIR).
const char* BinaryDir();
/// The asvrun executable of this build (build/tools/asvrun/asvrun).
const char* AsvrunPath();
/// The worker program of the process-group tests (build/tests/asvcpp/distributed/asv_dist_worker).
const char* DistWorkerPath();
/// The scoring benchmark of this build (build/tools/bench/asv_bench_scoring).
const char* BenchScoringPath();
/// The scale benchmark of this build (build/tools/bench/asv_bench_scale).
const char* BenchScalePath();

}  // namespace asv::testing

#define ASV_SOURCE_DIR (::asv::testing::SourceDir())
#define ASV_BINARY_DIR (::asv::testing::BinaryDir())
#define ASV_ASVRUN (::asv::testing::AsvrunPath())
#define ASV_DIST_WORKER (::asv::testing::DistWorkerPath())
#define ASV_BENCH_SCORING (::asv::testing::BenchScoringPath())
#define ASV_BENCH_SCALE (::asv::testing::BenchScalePath())
