// The version asvrun reports and records. Defined in a source that CMake generates at configure
// time (tools/asvrun/version.cc.in), so that only that one small file changes with the commit.
#pragma once

namespace asv::tools {
/// asvcpp version and the git commit the build was configured from, e.g. "0.1.0 (1397f73-dirty)".
extern const char* const kAsvcppVersion;
}  // namespace asv::tools
