// asvrun: runs the configs of a recipe and inspects configs and the experiment database.
// Usage and examples: `asvrun --help` (cli.cc). This executable links neither LibTorch nor the
// audio decoders: it runs the commands that read configs, databases and score files itself and
// replaces itself (execv, same arguments) with asvrun-torch from its own folder for those that
// need LibTorch, and with asvrun-kaldi for the Kaldi tools (cli.h).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "tools/asvrun/cli.h"

namespace {

// Replaces this process with `executable` from this executable's folder, passing argv unchanged
// (argv[0] too, so the command line recorded with a run is the one the user typed). Returns only
// by throwing.
int ExecSibling(const char* executable, const char* what, int argc, char** argv) {
  const std::string path = (asv::fs::SelfExecutable().parent_path() / executable).string();
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  throw asv::Error(asv::kExitFailure, fmt::format("cannot start {}: {} (asvrun runs {} through {}, which is built and "
                                                  "installed beside it)",
                                                  path, std::strerror(errno), what, executable));
}

}  // namespace

int main(int argc, char** argv) {
  asv::tools::TorchCommands commands;
  commands.run = [&](const asv::tools::RunOptions&) {
    return ExecSibling("asvrun-torch", "configs and `info`", argc, argv);
  };
  commands.info = [&] { return ExecSibling("asvrun-torch", "configs and `info`", argc, argv); };
  commands.export_model = [&](const asv::tools::ExportOptions&) {
    return ExecSibling("asvrun-torch", "`export`", argc, argv);
  };
  commands.embed = [&](const asv::tools::EmbedOptions&) { return ExecSibling("asvrun-torch", "`embed`", argc, argv); };
  commands.verify = [&](const asv::tools::VerifyOptions&) {
    return ExecSibling("asvrun-torch", "`verify`", argc, argv);
  };
  commands.kaldi_tool = [&](const std::string&, const std::vector<std::string>&) {
    return ExecSibling("asvrun-kaldi", "the Kaldi tools", argc, argv);
  };
  return asv::tools::AsvrunMain(argc, argv, commands);
}
