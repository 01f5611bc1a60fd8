#include "tests/build_paths.h"

namespace asv::testing {

const char* SourceDir() { return ASV_BUILD_SOURCE_DIR; }
const char* BinaryDir() { return ASV_BUILD_BINARY_DIR; }
const char* AsvrunPath() { return ASV_BUILD_ASVRUN; }
const char* DistWorkerPath() { return ASV_BUILD_DIST_WORKER; }
const char* BenchScoringPath() { return ASV_BUILD_BENCH_SCORING; }
const char* BenchScalePath() { return ASV_BUILD_BENCH_SCALE; }

}  // namespace asv::testing
