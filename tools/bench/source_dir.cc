#include "tools/bench/source_dir.h"

namespace asv::bench {
const char* SourceDir() { return ASV_BUILD_SOURCE_DIR; }
}  // namespace asv::bench
