// asvrun: runs the configs of a recipe and inspects configs and the experiment database.
// Usage and examples: `asvrun --help` (cli.cc). This executable links no LibTorch: it runs the
// commands that read configs, databases and score files itself and replaces itself (execv, same
// arguments) with asvrun-torch from its own folder for those that need LibTorch (cli.h).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "tools/asvrun/cli.h"

namespace {

// Replaces this process with asvrun-torch, passing argv unchanged (argv[0] too, so the command
// line recorded with a run is the one the user typed). Returns only by throwing.
int ExecAsvrunTorch(int argc, char** argv) {
  const std::string torch = (asv::fs::SelfExecutable().parent_path() / "asvrun-torch").string();
  std::vector<char*> args(argv, argv + argc);
  args.push_back(nullptr);
  ::execv(torch.c_str(), args.data());
  throw asv::Error(asv::kExitFailure,
                   fmt::format("cannot start {}: {} (asvrun runs configs and `info` through asvrun-torch, which is "
                               "built and installed beside it)",
                               torch, std::strerror(errno)));
}

}  // namespace

int main(int argc, char** argv) {
  asv::tools::TorchCommands torch;
  torch.run = [&](const asv::tools::RunOptions&) { return ExecAsvrunTorch(argc, argv); };
  torch.info = [&] { return ExecAsvrunTorch(argc, argv); };
  return asv::tools::AsvrunMain(argc, argv, torch);
}
