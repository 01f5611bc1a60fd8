// libFuzzer target of the config reader (tools/fuzz_configs.sh builds and runs it).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/parser/fuzz/config_fuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  asv::parser::fuzz::ReadConfigs(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
