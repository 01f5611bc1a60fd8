// One pass of the config reader over arbitrary bytes, as asvrun reads its files: shared by the
// libFuzzer target (config_fuzzer.cc, tools/fuzz_configs.sh) and the test that replays the kept
// corpus (tests/parser/fuzz_corpus/) in the regular build.
#pragma once

#include <string_view>

namespace asv::parser::fuzz {

/// Reads `data` as a run-configs file (ParseRunConfigs, CheckRunConfigs, every config resolved,
/// ParseRunConfigsFor of the first config), as an init config and as a `--set` literal, and
/// renders every diagnostic. Bad input must only be reported: a crash, a sanitizer finding, an
/// exception or a broken invariant (abort) is a bug. Invariant checked: a config that resolves
/// without errors from the whole file resolves to the same values from ParseRunConfigsFor.
void ReadConfigs(std::string_view data);

}  // namespace asv::parser::fuzz
