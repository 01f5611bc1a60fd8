// asvrun's command line (CLI11): every command, its options and help, shared by the three
// executables. `asvrun` (main.cc) links neither LibTorch nor the audio decoders (FFmpeg's
// libraries, libsndfile, soxr), so that showing, listing and querying commands start in
// milliseconds (loading LibTorch takes 0.6-0.9 s, FFmpeg's ~130 shared objects ~50 ms); it hands
// the commands that need LibTorch, running configs and `info`, to `asvrun-torch`
// (main_torch.cc), and the Kaldi tools that decode audio to `asvrun-kaldi` (main_kaldi.cc), both
// built and installed beside it.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace asv::tools {

struct RunOptions;
struct ExportOptions;
struct EmbedOptions;
struct VerifyOptions;

/// The commands that the front end hands to another executable. An empty function means the
/// command is not available in this executable (an error saying so).
struct TorchCommands {
  std::function<int(const RunOptions&)> run;  ///< `asvrun RECIPE CONFIG...` (LibTorch)
  std::function<int()> info;                  ///< `asvrun info` (LibTorch)
  std::function<int(const ExportOptions&)> export_model;  ///< `asvrun export` (LibTorch)
  std::function<int(const EmbedOptions&)> embed;          ///< `asvrun embed` (LibTorch, audio decoding)
  std::function<int(const VerifyOptions&)> verify;        ///< `asvrun verify` (LibTorch, audio decoding)
  /// `asvrun compute-mfcc-feats|compute-vad ARGS...`: the tool's name and the arguments after it.
  std::function<int(const std::string& tool, const std::vector<std::string>& args)> kaldi_tool;
};

/// Parses `argv` and runs the command it names. Returns the process exit status (asv::kExit*:
/// 0 ok, 2 bad configuration or command line, 3 bad data, 4 database error, 5 a stage failed);
/// errors are printed to stderr, not thrown.
int AsvrunMain(int argc, char** argv, const TorchCommands& torch_commands);

}  // namespace asv::tools
