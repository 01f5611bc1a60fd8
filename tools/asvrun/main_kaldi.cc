// asvrun-kaldi: asvrun with the Kaldi tools that decode audio (compute-mfcc-feats, compute-vad),
// which `asvrun` hands to it, so that the front end does not load the audio decoders. Without
// LibTorch; running configs and `info` are not available here (asvrun-torch runs them).
#include "tools/asvrun/cli.h"
#include "tools/asvrun/kaldi_commands.h"

int main(int argc, char** argv) {
  asv::tools::TorchCommands commands;
  commands.kaldi_tool = asv::tools::RunKaldiTool;
  return asv::tools::AsvrunMain(argc, argv, commands);
}
