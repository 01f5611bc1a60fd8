#include "tests/parser/fuzz/config_fuzz.h"

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "asvcpp/base/diagnostic.h"
#include "asvcpp/base/error.h"
#include "parser/parse.h"
#include "parser/resolve.h"

namespace asv::parser::fuzz {

namespace {

[[noreturn]] void Broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "config fuzz: invariant broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Renders the diagnostics as asvrun prints them (ConfigError's report).
void Render(const Diagnostics& diags) {
  if (diags.empty()) return;
  (void)diags.Render();
  if (diags.has_errors()) (void)ConfigError(diags.all()).what();
}

}  // namespace

void ReadConfigs(std::string_view data) {
  const std::string text(data);

  Diagnostics diags;
  const RunConfigsFile file = ParseRunConfigs(text, "run_configs", diags);
  CheckRunConfigs(file, diags);
  const bool file_ok = !diags.has_errors();
  Resolver resolver(file);
  // Every config, each at most once; capped so that one input stays quick.
  for (std::size_t b = 0; b < file.blocks.size() && b < 64; ++b) {
    Diagnostics config_diags;
    if (const ResolvedConfig* config = resolver.Resolve(file.blocks[b].name, config_diags)) (void)Dump(*config);
    diags.AppendUnique(config_diags);
  }
  Render(diags);

  if (!file.blocks.empty()) {
    const std::string& name = file.blocks.front().name;
    Diagnostics for_diags;
    const RunConfigsFile some = ParseRunConfigsFor(text, "run_configs", {name}, for_diags);
    CheckRunConfigs(some, for_diags);
    Diagnostics resolve_diags;
    const auto from_some = Resolve(some, name, resolve_diags);
    Render(for_diags);
    Diagnostics whole_diags;
    const auto from_whole = file_ok ? Resolve(file, name, whole_diags) : std::nullopt;
    if (from_whole) {
      if (for_diags.has_errors() || !from_some) Broken("ParseRunConfigsFor fails where the whole file resolves", name);
      if (Dump(*from_some) != Dump(*from_whole) || from_some->chain != from_whole->chain) {
        Broken("ParseRunConfigsFor resolves differently", Dump(*from_some) + "---\n" + Dump(*from_whole));
      }
    }
  }

  Diagnostics init_diags;
  const InitConfigFile init = ParseInitConfig(text, "init_config", init_diags);
  (void)Dump(ResolveInit(init));
  Render(init_diags);

  Diagnostics literal_diags;
  if (const auto value = ParseLiteral(text, "--set a.b", literal_diags)) (void)value->Repr();
  Render(literal_diags);
}

}  // namespace asv::parser::fuzz
