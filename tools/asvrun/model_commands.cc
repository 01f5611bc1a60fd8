// `asvrun export` (WeSpeaker's format, ASVtorch's or ONNX) and `asvrun embed` (commands.h), and the model
// loading and audio embedding they share with `asvrun verify` (loaded_model.h): models of recorded
// voxceleb/margin, voxceleb/xvector and sitw/xvector runs and WeSpeaker model directories, linked
// into asvrun-torch only (cli.h).
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/data/pcm_store.h"
#include "asvcpp/deploy/onnx_export.h"
#include "asvcpp/features/pcm_fbank_source.h"
#include "asvcpp/models/asvtorch_model.h"
#include "asvcpp/models/wespeaker_model.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/settings/dump.h"
#include "asvcpp/train/checkpoint_io.h"
#include "asvcpp/train/precision.h"
#include "recipes/catalog.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/shared/xvector/onnx_front_end.h"
#include "recipes/shared/xvector/xvector_model.h"
#include "recipes/shared/xvector/xvector_settings.h"
#include "recipes/voxceleb/margin/margin_model.h"
#include "recipes/voxceleb/margin/margin_recipe.h"
#include "tools/asvrun/commands.h"
#include "tools/asvrun/loaded_model.h"

namespace asv::tools {
namespace stdfs = std::filesystem;
namespace margin = recipes::voxceleb_margin;

namespace {

std::string Device(const std::string& device) {
  if (device == "cpu") return device;
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    if (!torch::cuda::is_available()) throw ConfigError(fmt::format("--device {}: no CUDA device is visible", device));
    return device == "cuda" ? "cuda:0" : device;
  }
  throw ConfigError(fmt::format("--device {}: expected cpu, cuda or cuda:N", device));
}

bool IsRunId(const std::string& s) {
  return !s.empty() && s.size() < 19 &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// The run's resolved settings, as it recorded them.
std::shared_ptr<recipe::RecipeSettings> SettingsOfRun(const db::RunRow& run) {
  std::shared_ptr<recipe::RecipeSettings> settings = recipes::FindRecipe(run.info.recipe).NewSettings();
  try {
    settings::FromJson(settings->tree(), nlohmann::ordered_json::parse(run.info.settings_json));
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("run {}: its stored settings are not JSON: {}", run.id, e.what()));
  }
  return settings;
}

RunSystem SystemOfRun(const db::RunRow& run, const recipe::RecipeSettings& settings) {
  RunSystem system;
  system.run_id = run.id;
  system.config = run.info.config;
  system.folder = (stdfs::path(run.info.output_folder) / settings.common().paths.system_folder).lexically_normal();
  system.backend = settings.common().backend;
  return system;
}

// The folder a run ran in, where its relative paths point: its absolute output folder less the
// relative paths.output_folder it recorded; nullopt when that cannot be told.
std::optional<stdfs::path> RunFolder(const db::RunRow& run, const recipe::RecipeSettings& settings) {
  const stdfs::path recorded = stdfs::path(settings.common().paths.output_folder).lexically_normal();
  if (recorded.is_absolute()) return std::nullopt;
  stdfs::path folder = stdfs::path(run.info.output_folder).lexically_normal();
  std::vector<std::string> parts;
  for (const auto& part : recorded) {
    if (!part.empty() && part != ".") parts.push_back(part.string());
  }
  for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
    if (folder.filename().empty()) folder = folder.parent_path();  // a trailing separator
    if (*it == ".." || folder.filename() != *it) return std::nullopt;
    folder = folder.parent_path();
  }
  return folder;
}

// Makes a relative paths.kaldi_mfcc_conf_file absolute: against the run's folder, else the current
// one. Throws DataError naming the places looked in when neither has it.
void ResolveMfccConf(const db::RunRow& run, recipe::RecipeSettings& settings) {
  std::string& conf = settings.common().paths.kaldi_mfcc_conf_file;
  if (stdfs::path(conf).is_absolute()) return;
  std::vector<stdfs::path> candidates;
  if (const auto folder = RunFolder(run, settings)) candidates.push_back(*folder / conf);
  candidates.push_back(stdfs::absolute(conf));
  for (const auto& candidate : candidates) {
    std::error_code ec;
    if (stdfs::is_regular_file(candidate, ec)) {
      conf = candidate.lexically_normal().string();
      return;
    }
  }
  std::string places;
  for (const auto& candidate : candidates) places += (places.empty() ? "" : ", ") + candidate.string();
  throw DataError(
      fmt::format("run {}: paths.kaldi_mfcc_conf_file = '{}', the MFCC options of its features, is in "
                  "neither {}",
                  run.id, conf, places));
}

bool IsXvectorRecipe(const std::string& recipe) {
  return recipe == "voxceleb/xvector" || recipe == "sitw/xvector";
}

// The run's model as its stage 8 (voxceleb/margin) or 7 (x-vector recipes) uses it.
LoadedModel FromRun(const db::RunRow& run, const std::string& device) {
  if (run.info.recipe != "voxceleb/margin" && !IsXvectorRecipe(run.info.recipe)) {
    throw DataError(
        fmt::format("run {} is of recipe {}: asvrun export, embed and verify take the models of voxceleb/margin, "
                    "voxceleb/xvector and sitw/xvector runs and WeSpeaker model directories",
                    run.id, run.info.recipe));
  }
  LoadedModel out;
  out.settings = SettingsOfRun(run);
  out.system = SystemOfRun(run, *out.settings);
  if (IsXvectorRecipe(run.info.recipe)) {
    auto& settings = dynamic_cast<recipes::xvector::XvectorSettings&>(*out.settings);
    ResolveMfccConf(run, settings);
    auto model = recipes::xvector::LoadRunModel(settings, stdfs::path(run.info.output_folder), device);
    out.front_end = LoadedModel::FrontEnd::kMfcc;
    out.mfcc = model.front_end;
    out.extraction = model.extraction;
    out.epoch = model.epoch;
    out.weights = model.file;
    out.has_head = false;
    out.incompatibility =
        fmt::format("an x-vector network ({}): WeSpeaker has no such architecture (export it with --format onnx)",
                    settings.common().network.ArchitectureName());
    out.description = fmt::format("run {} ({}), {}", run.id, run.info.config, model.file.string());
    out.extractor.emplace(std::move(model.extractor));
    train::ApplyMathModes(settings.common().computing.allow_tf32);
    return out;
  }
  auto& settings = dynamic_cast<margin::MarginSettings&>(*out.settings);
  auto model = margin::LoadRunModel(settings, stdfs::path(run.info.output_folder), device);
  out.config = margin::WespeakerConfigOf(settings, model.classes);
  out.incompatibility = margin::WespeakerIncompatibility(settings);
  out.fbank = model.fbank;
  out.extraction = model.extraction;
  out.weights = model.file;
  out.description = fmt::format("run {} ({}), {}", run.id, run.info.config, model.file.string());
  out.extractor.emplace(std::move(model.extractor));
  train::ApplyMathModes(settings.common().computing.allow_tf32);
  return out;
}

LoadedModel FromWespeaker(const stdfs::path& path, const std::string& device) {
  auto imported = models::ImportWespeakerModel(path);
  LoadedModel out;
  out.config = imported.config;
  out.fbank = models::FbankOptionsOf(imported.config);
  out.extraction.skip_empty = true;
  // Whole utterances, as WeSpeaker extracts them (extract.py with batch size 1, cli/speaker.py):
  // a batch holds only utterances of the same length, none is cut.
  out.extraction.max_cut_portion = 0;
  out.weights = imported.files.weights;
  out.description = fmt::format("WeSpeaker model {} ({})", imported.files.weights.string(), imported.config.model);
  out.has_head = imported.has_head;
  out.extractor.emplace(imported.net, device);
  return out;
}

// The newest finished run whose system folder is `folder`, from `db_path`.
db::RunRow RunOfSystemFolder(const stdfs::path& folder, const stdfs::path& db_path) {
  std::error_code ec;
  if (!stdfs::is_regular_file(db_path, ec)) {
    throw DataError(
        fmt::format("--model {}: not a WeSpeaker model directory (no config.yaml), and no experiment "
                    "database {} records a run with this system folder (give --db)",
                    folder.string(), db_path.string()));
  }
  db::DatabaseOptions options;
  options.read_only = true;
  db::Database database(db_path, options);
  const stdfs::path wanted = stdfs::weakly_canonical(folder);
  for (const auto& run : database.ListRuns()) {  // newest first
    if (run.status != db::RunStatus::kFinished) continue;
    const auto settings = nlohmann::json::parse(run.info.settings_json, nullptr, false);
    if (!settings.is_object() || !settings.contains("paths.system_folder")) continue;
    const stdfs::path system = stdfs::weakly_canonical(stdfs::path(run.info.output_folder) /
                                                       settings["paths.system_folder"].get<std::string>());
    if (system == wanted) return run;
  }
  throw DataError(
      fmt::format("--model {}: no finished run in {} has this system folder", folder.string(), db_path.string()));
}

}  // namespace

LoadedModel LoadModel(const ModelOptions& options) {
  const std::string device = Device(options.device);
  const stdfs::path path(options.model);
  LoadedModel model;
  if (IsRunId(options.model)) {
    auto selection = options.selection;
    if (selection.source.recipe.empty()) selection.source.recipe = "voxceleb/margin";
    auto database = OpenDatabaseForReading(selection);
    const auto run = database.GetRun(std::stoll(options.model));
    if (!run)
      throw DbError(fmt::format("--model {}: the experiment database has no run {}", options.model, options.model));
    model = FromRun(*run, device);
  } else if (models::LooksLikeWespeakerModel(path)) {
    model = FromWespeaker(path, device);
  } else if (stdfs::is_directory(path)) {
    const stdfs::path db_path = options.selection.db.empty() ? stdfs::absolute(path).parent_path() / "experiments.db"
                                                             : stdfs::path(options.selection.db);
    model = FromRun(RunOfSystemFolder(path, db_path), device);
  } else {
    throw DataError(
        fmt::format("--model {}: neither a run id, a system folder of a recorded run, nor a WeSpeaker model "
                    "directory (avg_model.pt + config.yaml) or .pt file with a config.yaml",
                    options.model));
  }
  ASV_LOG(Info, "model: {}", model.description);
  return model;
}

AudioEmbeddings EmbedAudio(const LoadedModel& model, const std::vector<data::PcmStoreEntry>& entries,
                           const stdfs::path& scratch, int threads, bool clean_features) {
  if (model.front_end == LoadedModel::FrontEnd::kMfcc) {
    auto front_end = *model.mfcc;
    front_end.stage1.threads = threads;
    return recipes::xvector::EmbedAudio(*model.extractor, model.extraction, front_end, entries, scratch,
                                        clean_features);
  }
  const auto prepare = [&] {
    const stdfs::path store_folder = scratch / "pcm_store";
    data::PcmStoreOptions store_options;
    store_options.sample_rate = model.config.sample_rate;
    store_options.threads = threads;
    recipes::shared::GivenAudioFeatures features;
    features.skipped = data::BuildPcmStore(entries, store_folder, store_options).skipped;
    const auto store = std::make_shared<const data::PcmStore>(data::PcmStore::Open(store_folder));
    std::vector<std::size_t> all(store->NumUtterances());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    features.source = std::make_shared<const features::PcmFbankSource>(store, all, model.fbank);
    return features;
  };
  return recipes::shared::EmbedGivenAudio(
      scratch, prepare,
      [&](const data::FeatureSource& source, const std::vector<int>& u) {
        return model.extractor->Extract(source, u, model.extraction);
      },
      model.fbank.frame_opts.frame_shift_ms / 1000.0,
      [](const data::FeatureSource& source, int i) {
        return fmt::format("{} fbank frames: too short for the network", source.NumFrames(i));
      });
}

namespace {

// `id value` lines of a wav.scp, in file order.
std::vector<data::PcmStoreEntry> ReadWavScp(const stdfs::path& path) {
  std::vector<data::PcmStoreEntry> entries;
  std::ifstream in(path);
  if (!in) throw DataError(fmt::format("{}: cannot read the wav.scp", path.string()));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos) continue;
    const auto end = line.find_first_of(" \t", start);
    const auto value = end == std::string::npos ? std::string::npos : line.find_first_not_of(" \t", end);
    if (value == std::string::npos) {
      throw DataError(fmt::format("{}:{}: expected 'id audio', got '{}'", path.string(), number, line));
    }
    std::string source = line.substr(value);
    while (!source.empty() && (source.back() == '\r' || source.back() == ' ')) source.pop_back();
    entries.push_back({line.substr(start, end - start), source});
  }
  return entries;
}

// Writes `m` as a NumPy .npy file (format 1.0, '<f4', C order).
void WriteNpy(const stdfs::path& path, const Matrix& m) {
  std::string header =
      fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", m.rows(), m.cols());
  const std::size_t unpadded = 10 + header.size() + 1;
  header += std::string((64 - unpadded % 64) % 64, ' ') + "\n";
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  for (std::int64_t r = 0; r < m.rows(); ++r) {
    for (std::int64_t c = 0; c < m.cols(); ++c) {
      const float v = m(r, c);
      out.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
  }
  fs::WriteFileAtomic(path, out);
}

}  // namespace

int ExportModel(const ExportOptions& options) {
  auto model = LoadModel(options.model);
  if (options.format == "onnx") {
    std::optional<deploy::OnnxFrontEnd> front_end;
    if (options.with_frontend && model.front_end == LoadedModel::FrontEnd::kMfcc) {
      front_end = recipes::xvector::XvectorOnnxFrontEnd(model.settings->common());
    } else if (options.with_frontend) {
      front_end.emplace();
      front_end->kind = deploy::OnnxFrontEnd::Kind::kFbank;
      front_end->fbank = model.fbank;
      front_end->cmn = true;  // WeSpeaker's and the recipe's mean normalisation (cmvn without variance)
    }
    model.extractor->net().eval();
    const auto summary = deploy::ExportOnnx(model.extractor->net(), options.out, front_end);
    fmt::print("{}: ONNX graph of {} ({} nodes, {} bytes; input {}) of {}\n", options.out, summary.architecture,
               summary.nodes, summary.bytes,
               !front_end       ? "feats [batch, frames, dim]"
               : front_end->vad ? "waveform [1, samples]"
                                : "waveform [batch, samples]",
               model.description);
    return kExitOk;
  }
  if (options.format == "asvtorch") {
    if (model.front_end != LoadedModel::FrontEnd::kMfcc) {
      throw ConfigError(fmt::format("--model {}: --format asvtorch takes the networks of x-vector runs "
                                    "(voxceleb/xvector, sitw/xvector); this model goes out with --format "
                                    "wespeaker or onnx",
                                    options.model.model));
    }
    // BaseNet's bookkeeping values as the checkpoint holds them.
    const auto meta = train::ReadCheckpointMeta(model.weights);
    const models::AsvtorchNetState state{meta.feat_dim, meta.n_speakers,
                                         static_cast<float>(meta.schedule.training_loss),
                                         meta.schedule.consecutive_lr_updates};
    models::ExportAsvtorchModel(options.out, model.extractor->net(), state);
    fmt::print("{}: ASVtorch state dict of {} (network.network_class = '{}', feat_dim {}, n_speakers {}) of {}\n",
               options.out, meta.architecture, model.settings->common().network.network_class, meta.feat_dim,
               meta.n_speakers, model.description);
    return kExitOk;
  }
  if (!model.incompatibility.empty()) {
    throw ConfigError(fmt::format("--model {}: no WeSpeaker form: {}", options.model.model, model.incompatibility));
  }
  models::ExportWespeakerModel(options.out, model.extractor->net(), model.config, model.has_head);
  fmt::print("{}: {} and {} of {}\n", options.out, models::kWespeakerWeights, models::kWespeakerConfig,
             model.description);
  return kExitOk;
}

int Embed(const EmbedOptions& options) {
  if (options.wav_scp.empty() == options.audio.empty()) {
    throw ConfigError("asvrun embed: give either --wav-scp FILE or audio files, not both");
  }
  std::vector<data::PcmStoreEntry> entries;
  if (!options.wav_scp.empty()) {
    entries = ReadWavScp(options.wav_scp);
  } else {
    for (const auto& file : options.audio) entries.push_back({stdfs::path(file).stem().string(), file});
  }
  std::map<std::string, std::string> seen;
  for (const auto& e : entries) {
    if (!seen.emplace(e.id, e.source).second) {
      throw DataError(
          fmt::format("two inputs have the id '{}' ({} and {}): name them in a --wav-scp", e.id, seen[e.id], e.source));
    }
  }
  if (entries.empty()) throw DataError(fmt::format("{}: no utterances", options.wav_scp));
  const auto model = LoadModel(options.model);

  const stdfs::path out = stdfs::absolute(options.out);  // the scp names the archive by this path
  auto [embeddings, skipped] = EmbedAudio(model, entries, out / "embed.tmp", options.threads, options.clean_features);

  std::string skipped_text;
  for (const auto& s : skipped) skipped_text += s.utterance + " " + s.reason + "\n";
  fs::WriteFileAtomic(out / "skipped.txt", skipped_text);
  for (const auto& s : skipped) ASV_LOG(Warning, "skipped {}: {}", s.utterance, s.reason);
  if (embeddings.ids.empty()) {
    throw DataError(
        fmt::format("no embedding: all {} inputs were skipped ({})", entries.size(), (out / "skipped.txt").string()));
  }
  backend::WriteEmbeddings(out / "embeddings", embeddings);
  WriteNpy(out / "embeddings.npy", embeddings.vectors);
  std::string ids;
  for (const auto& id : embeddings.ids) ids += id + "\n";
  fs::WriteFileAtomic(out / "utt_ids.txt", ids);
  fmt::print("{}: {} embeddings of dimension {} ({} skipped) from {}\n", out.string(), embeddings.ids.size(),
             embeddings.vectors.cols(), skipped.size(), model.description);
  return kExitOk;
}

}  // namespace asv::tools
