// asvrun's command line (CLI11): every command, its options and help, shared by the two
// executables. `asvrun` (main.cc) links no LibTorch, so that showing, listing and querying
// commands start in milliseconds (loading LibTorch takes 0.6-0.9 s); it hands the commands that
// need LibTorch, running configs and `info`, to `asvrun-torch` (main_torch.cc), built and
// installed beside it, which runs them.
#pragma once

#include <functional>

namespace asv::tools {

struct RunOptions;

/// The commands that need LibTorch.
struct TorchCommands {
  std::function<int(const RunOptions&)> run;  ///< `asvrun RECIPE CONFIG...`
  std::function<int()> info;                  ///< `asvrun info`
};

/// Parses `argv` and runs the command it names. Returns the process exit status (asv::kExit*:
/// 0 ok, 2 bad configuration or command line, 3 bad data, 4 database error, 5 a stage failed);
/// errors are printed to stderr, not thrown.
int AsvrunMain(int argc, char** argv, const TorchCommands& torch_commands);

}  // namespace asv::tools
