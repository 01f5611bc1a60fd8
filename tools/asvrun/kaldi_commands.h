// Kaldi-style feature commands of asvrun, with the command lines of Kaldi's binaries so that
// existing scripts and habits carry over:
//
//   asvrun compute-mfcc-feats --config=mfcc.conf scp:wav.scp ark,t:-
//   asvrun compute-mfcc-feats --config=mfcc.conf --compress=true scp:wav.scp ark,scp:mfcc.ark,feats.scp
//   asvrun compute-vad --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 scp:feats.scp ark,t:vad.txt
//
// Option handling follows Kaldi's ParseOptions (src/util/parse-options.cc): options come before
// the positional arguments as --name=value (a bare --name sets a boolean to true; names are
// case-insensitive and '_' equals '-'); --config=FILE files are read first and options given on
// the command line override them, whatever their order; a lone "--" ends the options; --help
// prints the usage and every option with its current value.
//
// Inputs and outputs are Kaldi tables (features/kaldi_io.h): the MFCC rspecifier is a script of
// wav.scp values ("scp:FILE", "-" for stdin), each decoded by asv::audio (files of any format
// libsndfile or ffmpeg reads, "cmd |" pipes, "cat:LIST" concatenations); wspecifiers are
// "ark[,t]:A" and "ark,scp[,t]:A,S" with "-" for stdout.
#pragma once

#include <string>
#include <vector>

namespace asv::tools {

/// `asvrun compute-mfcc-feats [options] WAV-RSPECIFIER FEATS-WSPECIFIER`: Kaldi's
/// compute-mfcc-feats. Options: every MfccOptions field under its Kaldi name (feature_options.h),
/// --config, --vtln-warp, --min-duration (seconds; shorter audio produces no output),
/// --channel (-1 or 0: the first channel; Kaldi's other channels are not supported), and the
/// asvcpp extension --compress (write Kaldi compressed matrices, what make_mfcc.sh pipes
/// through copy-feats --compress=true). Differences from Kaldi, on purpose:
///   * dither noise is seeded per utterance with the FNV-1a hash of its key (the same seed as
///     recipe stage 1), so results are reproducible and equal to stage 1's;
///   * audio whose rate differs from --sample-frequency is resampled with libsoxr when
///     --allow-downsample / --allow-upsample permits it (Kaldi uses its own resampler); without
///     permission the utterance fails, as in Kaldi.
/// An utterance that cannot be read or is too short fails with a warning naming its file and
/// is left out. `args` are the arguments after the command name. Returns 0 when at least one
/// utterance was written (Kaldi's rule), kExitDataError when none was, kExitConfigError after
/// printing the usage for wrong arguments. Throws ConfigError for unknown options, bad values
/// and unreadable or invalid --config files; DataError for unreadable inputs or unwritable
/// outputs.
int ComputeMfccFeats(const std::vector<std::string>& args);

/// `asvrun compute-vad [options] FEATS-RSPECIFIER VAD-WSPECIFIER`: Kaldi's compute-vad, the
/// energy VAD of features/vad.h on column 0 of each feature matrix, written as a 0/1 float
/// vector. Options: VadOptions under their Kaldi names (Kaldi's defaults; VoxCeleb v2 uses
/// --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 --vad-frames-context=2
/// --vad-proportion-threshold=0.12) and --config. Empty matrices are skipped with a warning.
/// Returns 0 when at least one vector was written, kExitDataError otherwise, kExitConfigError
/// after printing the usage for wrong arguments. Throws as ComputeMfccFeats.
int ComputeVad(const std::vector<std::string>& args);

/// Runs Kaldi tool `tool` ("compute-mfcc-feats" or "compute-vad") with `args`, as above.
/// Throws std::invalid_argument for another name.
int RunKaldiTool(const std::string& tool, const std::vector<std::string>& args);

}  // namespace asv::tools
