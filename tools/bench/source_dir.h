// The repository the benchmark was built from, for its default input files. Compiled into one
// small source (source_dir.cc) so that the benchmark's own source is the same text in every
// clone (compiler-cache hits, cmake/AsvCcache.cmake).
#pragma once

namespace asv::bench {
/// The repository root, absolute (CMake's PROJECT_SOURCE_DIR at configure time).
const char* SourceDir();
}  // namespace asv::bench
