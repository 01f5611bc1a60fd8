// asvrun-torch: asvrun with the commands that need LibTorch (running configs, `info`, `export`,
// `embed`, `verify`), which `asvrun` hands to it; accepts every asvrun command line (cli.cc).
// Data-parallel workers are started from this executable.
#include "asvcpp/distributed/runtime_info.h"
#include "tools/asvrun/cli.h"
#include "tools/asvrun/commands.h"
#include "tools/asvrun/kaldi_commands.h"

int main(int argc, char** argv) {
  // Every core for training in one process, extraction and scoring; data-parallel CPU workers
  // then take their share (job.cc).
  asv::distributed::UseEveryCoreUnlessTold();
  asv::tools::TorchCommands commands;
  commands.run = asv::tools::RunConfigs;
  commands.info = asv::tools::Info;
  commands.export_model = asv::tools::ExportModel;
  commands.embed = asv::tools::Embed;
  commands.verify = asv::tools::Verify;
  commands.kaldi_tool = asv::tools::RunKaldiTool;
  return asv::tools::AsvrunMain(argc, argv, commands);
}
