// asvrun-torch: asvrun with the commands that need LibTorch (running configs, `info`), which
// `asvrun` hands to it; accepts every asvrun command line (cli.cc). Data-parallel workers are
// started from this executable.
#include "tools/asvrun/cli.h"
#include "tools/asvrun/commands.h"

int main(int argc, char** argv) {
  asv::tools::TorchCommands torch;
  torch.run = asv::tools::RunConfigs;
  torch.info = asv::tools::Info;
  return asv::tools::AsvrunMain(argc, argv, torch);
}
