#include "tools/asvrun/kaldi_commands.h"

#include <cmath>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/features/dither_seed.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"

namespace asv::tools {
namespace {

constexpr const char* kMfccUsage = R"(Create MFCC feature files (Kaldi's compute-mfcc-feats).
Usage:  asvrun compute-mfcc-feats [options...] <wav-rspecifier> <feats-wspecifier>
e.g.:   asvrun compute-mfcc-feats --config=run_configs/voxceleb/xvector/mfcc.conf scp:wav.scp ark,t:-
        asvrun compute-mfcc-feats --config=mfcc.conf --compress=true scp:wav.scp ark,scp:mfcc.ark,feats.scp
The rspecifier is scp:FILE with FILE a wav.scp: lines "<utt> <audio file>", "<utt> <command> |"
or "<utt> cat:<concatenation list>".
Dither is seeded per utterance from its key, so output is reproducible.
Options:
)";

constexpr const char* kVadUsage = R"(Voice activity detection from the energy in C0 (Kaldi's compute-vad).
Usage:  asvrun compute-vad [options...] <feats-rspecifier> <vad-wspecifier>
e.g.:   asvrun compute-vad --vad-energy-threshold=5.5 --vad-energy-mean-scale=0.5 --vad-frames-context=2 \
          --vad-proportion-threshold=0.12 scp:feats.scp ark,t:-
Options:
)";

// Positional arguments after Kaldi-style option parsing; nullopt after --help.
std::optional<std::vector<std::string>> ParseKaldiArgs(const std::vector<std::string>& args,
                                                       features::KaldiOptions& registry) {
  std::vector<std::string> configs;
  std::vector<std::string> options;
  std::size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a == "-h" || a == "--help") return std::nullopt;
    if (a.size() < 3 || a.compare(0, 2, "--") != 0) break;
    const std::size_t eq = a.find('=');
    const std::string name = features::KaldiOptions::NormalizeName(a.substr(2, eq == std::string::npos ? eq : eq - 2));
    if (name == "config") {
      if (eq == std::string::npos || eq + 1 == a.size())
        throw ConfigError("option --config needs a file: --config=FILE");
      configs.push_back(a.substr(eq + 1));
    } else {
      options.push_back(a);
    }
  }
  try {
    // As in Kaldi: config files first, then the command line overrides them.
    for (const auto& file : configs) registry.ReadConfigFile(file);
    for (const auto& a : options) {
      const std::size_t eq = a.find('=');
      if (eq == std::string::npos) {
        registry.Set(a.substr(2), {}, false, "command line");
      } else {
        registry.Set(a.substr(2, eq - 2), std::string_view(a).substr(eq + 1), true, "command line");
      }
    }
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
  return std::vector<std::string>(args.begin() + static_cast<std::ptrdiff_t>(i), args.end());
}

int Usage(const char* usage, const features::KaldiOptions& registry, bool error) {
  (error ? std::cerr : std::cout) << usage << registry.Help();
  return error ? kExitConfigError : kExitOk;
}

// The script file of a "scp[,opts]:FILE" rspecifier (Kaldi's ignorable options accepted).
std::string ScriptOfRspecifier(const std::string& rspecifier) {
  const std::size_t colon = rspecifier.find(':');
  bool scp = false;
  if (colon != std::string::npos) {
    std::string opts = rspecifier.substr(0, colon) + ",";
    for (std::size_t pos = 0, comma; (comma = opts.find(',', pos)) != std::string::npos; pos = comma + 1) {
      const std::string opt = opts.substr(pos, comma - pos);
      if (opt == "scp") {
        scp = true;
      } else if (opt != "p" && opt != "o" && opt != "s" && opt != "cs" && opt != "ns" && opt != "ncs" && opt != "b" &&
                 opt != "t") {
        scp = false;
        break;
      }
    }
  }
  if (!scp || colon + 1 >= rspecifier.size()) {
    throw ConfigError(fmt::format(
        "wav rspecifier '{}' is not supported: use scp:FILE where FILE is a wav.scp (archives of WAV data are not "
        "read)",
        rspecifier));
  }
  return rspecifier.substr(colon + 1);
}

// The file after the colon of an rspecifier ("scp:wav.scp", "ark,s,cs:feats.ark"), or "" for
// one without a file or reading stdin.
std::string FileOfRspecifier(const std::string& rspecifier) {
  const std::size_t colon = rspecifier.find(':');
  if (colon == std::string::npos) return "";
  const std::string file = rspecifier.substr(colon + 1);
  return file == "-" || (!file.empty() && file.back() == '|') ? "" : file;
}

// Refuses a wspecifier whose archive or script is one of the command's inputs (ConfigError).
void CheckNotOverInputs(const features::TableWriter& writer, const std::vector<fs::NamedPath>& inputs) {
  for (const std::string& file : writer.Files()) fs::CheckOutputIsNotInput({"the wspecifier's file", file}, inputs);
}

template <class Options>
void ValidateOrThrow(const Options& options) {
  try {
    options.Validate();
  } catch (const DataError& e) {
    throw ConfigError(e.what());
  }
}

}  // namespace

int ComputeMfccFeats(const std::vector<std::string>& args) {
  features::MfccOptions mfcc_options;
  float vtln_warp = 1.0f;
  float min_duration = 0.0f;
  std::int32_t channel = -1;
  bool compress = false;
  features::KaldiOptions registry;
  mfcc_options.Register(&registry);
  registry.Register("vtln-warp", &vtln_warp, "Vtln warp factor (only applicable if vtln-map not specified)");
  registry.Register("min-duration", &min_duration, "Minimum duration of segments to process (in seconds)");
  registry.Register("channel", &channel, "Channel to extract (-1 or 0: the first channel; others unsupported)");
  registry.Register("compress", &compress,
                    "asvcpp extension: write Kaldi compressed matrices (as copy-feats --compress=true)");

  const auto positional = ParseKaldiArgs(args, registry);
  if (!positional) return Usage(kMfccUsage, registry, false);
  if (positional->size() != 2) return Usage(kMfccUsage, registry, true);
  ValidateOrThrow(mfcc_options);
  if (channel != -1 && channel != 0) {
    throw ConfigError(fmt::format("--channel={} is not supported: asvcpp reads the first channel (-1 or 0)", channel));
  }
  const float samp_freq = mfcc_options.frame_opts.samp_freq;
  if (samp_freq != std::round(samp_freq)) {
    throw ConfigError(fmt::format("--sample-frequency={} is not a whole number of Hz", samp_freq));
  }

  const std::string script = ScriptOfRspecifier((*positional)[0]);
  const auto entries = features::ReadScpFile(script);
  const features::Mfcc mfcc(mfcc_options, vtln_warp);
  features::TableWriter writer((*positional)[1]);
  std::vector<fs::NamedPath> inputs{{"the rspecifier's file", script}};
  for (const auto& entry : entries) {
    if (!entry.second.empty() && entry.second.back() != '|') inputs.push_back({"an audio file of the wav.scp", entry.second});
  }
  CheckNotOverInputs(writer, inputs);
  audio::DecodeOptions decode_options;
  decode_options.sample_rate = static_cast<int>(samp_freq);

  std::size_t done = 0;
  for (const auto& [key, source] : entries) {
    try {
      const audio::Audio audio = audio::Decode(source, decode_options);
      const int rate = audio.source_sample_rate;
      if (rate != decode_options.sample_rate) {
        const bool down = rate > decode_options.sample_rate;
        if (!(down ? mfcc_options.frame_opts.allow_downsample : mfcc_options.frame_opts.allow_upsample)) {
          throw DataError(fmt::format(
              "{}: sample frequency {} Hz differs from --sample-frequency={}; use {} to "
              "resample",
              source, rate, decode_options.sample_rate, down ? "--allow-downsample=true" : "--allow-upsample=true"));
        }
      }
      if (audio.Seconds() < min_duration) {
        throw DataError(fmt::format("{}: too short ({:.3f} s < --min-duration={}): producing no output", source,
                                    audio.Seconds(), min_duration));
      }
      const Matrix feats = mfcc.Compute(audio.samples.data(), static_cast<std::int64_t>(audio.samples.size()),
                                        features::DitherSeed(key));
      if (compress) {
        writer.WriteCompressed(key, feats);
      } else {
        writer.Write(key, feats);
      }
      ++done;
    } catch (const DataError& e) {
      ASV_LOG(Warning, "compute-mfcc-feats: failed to compute features for utterance {}: {}", key, e.what());
    }
  }
  writer.Close();
  ASV_LOG(Info, "compute-mfcc-feats: done {} out of {} utterances", done, entries.size());
  return done > 0 ? kExitOk : kExitDataError;
}

int ComputeVad(const std::vector<std::string>& args) {
  features::VadOptions vad_options;
  features::KaldiOptions registry;
  vad_options.Register(&registry);

  const auto positional = ParseKaldiArgs(args, registry);
  if (!positional) return Usage(kVadUsage, registry, false);
  if (positional->size() != 2) return Usage(kVadUsage, registry, true);
  ValidateOrThrow(vad_options);

  features::TableWriter writer((*positional)[1]);
  CheckNotOverInputs(writer, {{"the rspecifier's file", FileOfRspecifier((*positional)[0])}});
  std::size_t done = 0, total = 0;
  double voiced = 0.0, frames = 0.0;
  for (features::TableReader reader((*positional)[0]); reader.Next(); ++total) {
    const Matrix feats = reader.value().ToMatrix(reader.key());
    if (feats.rows() == 0) {
      ASV_LOG(Warning, "compute-vad: empty feature matrix for utterance {}", reader.key());
      continue;
    }
    const std::vector<float> vad = features::ComputeVadEnergy(vad_options, feats);
    for (float v : vad) voiced += v;
    frames += static_cast<double>(vad.size());
    writer.Write(reader.key(), vad);
    ++done;
  }
  writer.Close();
  ASV_LOG(Info, "compute-vad: done {} out of {} utterances; {:.1f}% of frames voiced", done, total,
          frames > 0 ? 100.0 * voiced / frames : 0.0);
  return done > 0 ? kExitOk : kExitDataError;
}

int RunKaldiTool(const std::string& tool, const std::vector<std::string>& args) {
  if (tool == "compute-mfcc-feats") return ComputeMfccFeats(args);
  if (tool == "compute-vad") return ComputeVad(args);
  throw std::invalid_argument(fmt::format("RunKaldiTool: unknown tool '{}'", tool));
}

}  // namespace asv::tools
