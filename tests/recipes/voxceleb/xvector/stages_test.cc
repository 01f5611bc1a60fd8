// Stages 0 and 1 of voxceleb/xvector run through the real recipe, stage driver and database on
// tiny VoxCeleb-style corpora written by the tests (1-2 s of synthetic "speech": tone bursts
// separated by near-silence, so the VAD sees both classes).
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sndfile.h>
#include <unistd.h>

#include "asvcpp/audio/decode.h"
#include "asvcpp/augment/reverberate.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/data/data_dir.h"
#include "asvcpp/data/table.h"
#include "asvcpp/data/voxceleb.h"
#include "asvcpp/db/database.h"
#include "asvcpp/db/run_info.h"
#include "asvcpp/features/compressed_matrix.h"
#include "asvcpp/features/dither_seed.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"
#include "asvcpp/prep/dataset_features.h"
#include "asvcpp/recipe/run_context.h"
#include "asvcpp/recipe/stage_driver.h"
#include "asvcpp/train/checkpoint.h"
#include "recipes/catalog.h"
#include "recipes/registry.h"
#include "recipes/shared/recipe_stages.h"
#include "recipes/voxceleb/xvector/stage_prepare.h"
#include "recipes/voxceleb/xvector/xvector_recipe.h"
#include "recipes/voxceleb/xvector/xvector_stages.h"
#include "tests/build_paths.h"

namespace asv::recipes::voxceleb_xvector {
namespace {

using features::DitherSeed;
using prep::ExtractDatasetFeatures;
using prep::FeatureExtractionOptions;
using prep::FeatureExtractionReport;
using prep::FeatureOptionsFromSettings;

namespace stdfs = std::filesystem;

class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(stdfs::temp_directory_path() / ("asv_stages_test_" + std::to_string(::getpid()) + "_" + name)) {
    stdfs::remove_all(path_);
    stdfs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    stdfs::remove_all(path_, ec);
  }
  const stdfs::path& path() const { return path_; }
  stdfs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  stdfs::path path_;
};

bool HaveProgram(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

// `seconds` of tone bursts (0.3 s on, 0.2 s near-silence) at `rate` Hz; `seed` varies pitch/noise.
std::vector<float> SpeechLike(double seconds, int rate, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  const double hz = 150.0 + 50.0 * (seed % 5);
  const auto n = static_cast<std::size_t>(seconds * rate);
  std::vector<float> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i) / rate;
    const bool on = std::fmod(t, 0.5) < 0.3;
    s[i] = (on ? static_cast<float>(4000.0 * std::sin(2 * M_PI * hz * t) + 1500.0 * std::sin(2 * M_PI * 3 * hz * t))
               : 0.0f) +
           (on ? 200.0f : 3.0f) * noise(rng);
  }
  return s;
}

// VoxCeleb1-style corpus: <root>/wav/<spk>/<video>/<file>.wav plus veri_test.txt (official
// format). id10003/vidC holds an 8 kHz file (resampled by stage 1).
stdfs::path MakeVox1(const stdfs::path& root) {
  unsigned seed = 1;
  for (const char* spk : {"id10001", "id10002"}) {
    for (const char* video : {"vidA", "vidB"}) {
      for (const char* file : {"00001.wav", "00002.wav"}) {
        audio::WriteWav(root / "wav" / spk / video / file, SpeechLike(1.0 + 0.25 * (seed % 5), 16000, seed), 16000);
        ++seed;
      }
    }
  }
  audio::WriteWav(root / "wav" / "id10003" / "vidC" / "00001.wav", SpeechLike(1.5, 8000, 99), 8000);
  fs::WriteFileAtomic(root / "veri_test.txt",
                      "1 id10001/vidA/00001.wav id10001/vidB/00002.wav\n"
                      "0 id10001/vidA/00001.wav id10002/vidA/00001.wav\n"
                      "0 id10002/vidB/00002.wav id10003/vidC/00001.wav\n");
  return root;
}

// Adds bad audio files to a VoxCeleb1 tree: a zero-length file, a truncated WAV (header promises
// more data than there is) and text pretending to be a WAV.
void AddBadFiles(const stdfs::path& root) {
  fs::WriteFileAtomic(root / "wav" / "id10002" / "vidB" / "00003.wav", "");
  const std::string full = fs::ReadFile(root / "wav" / "id10002" / "vidB" / "00001.wav");
  fs::WriteFileAtomic(root / "wav" / "id10002" / "vidB" / "00004.wav", full.substr(0, full.size() / 2));
  fs::WriteFileAtomic(root / "wav" / "id10001" / "vidA" / "00009.wav", "this is not audio\n");
}

struct Experiment {
  stdfs::path output;
  stdfs::path mfcc_conf;
  std::unique_ptr<XvectorSettings> settings = std::make_unique<XvectorSettings>();
};

Experiment MakeExperiment(const TempDir& dir, const std::string& output = "out") {
  Experiment s;
  s.output = dir / output;
  s.mfcc_conf = dir / "mfcc.conf";
  if (!stdfs::exists(s.mfcc_conf)) {
    stdfs::copy_file(stdfs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", s.mfcc_conf);
  }
  auto& common = s.settings->common();
  common.paths.output_folder = s.output.string();
  common.paths.feature_and_list_folder = "datasets";
  common.paths.kaldi_mfcc_conf_file = s.mfcc_conf.string();
  common.paths.datasets = {{"voxceleb1", (dir / "vox1").string()}};
  common.features.sampling_rate = 16000;
  common.computing.feature_extraction_workers = 3;
  auto& recipe = s.settings->recipe();
  recipe.start_stage = 0;
  recipe.end_stage = 1;
  recipe.preparation_datasets = std::vector<std::string>{"voxceleb1"};
  recipe.feature_extraction_datasets = {"voxceleb1"};
  return s;
}

// Runs the selected stages as asvrun does: a run in the output folder's database, the stage
// driver recording each stage. Returns the run id.
std::int64_t RunStages(Experiment& s) {
  db::Database database(db::Database::DefaultPath(s.output));
  db::RunInfo info;
  info.recipe = "voxceleb/xvector";
  info.config = "test";
  info.output_folder = s.output.string();
  const std::int64_t run_id = database.BeginRun(info);
  recipe::RunContext context("voxceleb/xvector", "test", *s.settings, s.output, &database, run_id);
  XvectorRecipe recipe;
  XvectorStages stages;
  try {
    recipe::RunStages(recipe, stages, context);
  } catch (...) {
    database.FinishRun(run_id, db::RunStatus::kFailed, "test");
    throw;
  }
  database.FinishRun(run_id, db::RunStatus::kFinished);
  return run_id;
}

template <class E, class F>
std::string ErrorOf(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "expected an exception";
  return {};
}

bool Contains(const std::string& s, const std::string& needle) {
  return s.find(needle) != std::string::npos;
}

std::vector<std::string> Keys(const std::vector<std::pair<std::string, std::string>>& scp) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : scp) keys.push_back(k);
  return keys;
}

template <class Map>
std::vector<std::string> Keys(const Map& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : m) keys.push_back(k);
  return keys;
}

TEST(VoxcelebXvectorStagesTest, PrepareAndFeaturesProduceAlignedListsAndKaldiFeatures) {
  TempDir dir("main");
  MakeVox1(dir / "vox1");
  Experiment s = MakeExperiment(dir);
  const std::int64_t run_id = RunStages(s);

  const stdfs::path lists = s.output / "datasets/voxceleb1/lists";
  const data::DataDir data = data::DataDir::Load(lists);
  ASSERT_EQ(data.wav_scp.size(), 9u);
  EXPECT_EQ(data.utt2spk.at("id10003-vidC-00001"), "id10003");
  EXPECT_EQ(fs::ReadFile(lists / "veri_test.txt"),
            "id10001-vidA-00001 id10001-vidB-00002 1\n"
            "id10001-vidA-00001 id10002-vidA-00001 0\n"
            "id10002-vidB-00002 id10003-vidC-00001 0\n");
  EXPECT_EQ(fs::ReadFile(lists / "skipped_utterances"), "");

  // feats.scp, vad.scp, utt2spk and utt2num_frames hold the same utterances in the same order.
  const auto feats = features::ReadScpFile((lists / "feats.scp").string());
  const auto vads = features::ReadScpFile((lists / "vad.scp").string());
  EXPECT_EQ(Keys(feats), Keys(data.utt2spk));
  EXPECT_EQ(Keys(vads), Keys(data.utt2spk));
  EXPECT_EQ(Keys(data.utt2num_frames), Keys(data.utt2spk));
  for (const auto& [utt, rx] : feats) {
    EXPECT_EQ(rx.rfind((s.output / "datasets/voxceleb1/features/mfcc.ark").string() + ":", 0), 0u) << rx;
  }

  // The stored MFCCs are exactly the library's MFCCs of the same audio with the same dither seed,
  // compressed as Kaldi does; VAD is Kaldi's energy VAD (voxceleb v2) on the stored C0.
  const auto opts = features::ReadKaldiConfig<features::MfccOptions>(s.mfcc_conf.string());
  const features::Mfcc mfcc(opts);
  std::size_t voiced = 0, frames = 0;
  std::size_t i = 0;
  for (features::TableReader reader("scp:" + (lists / "feats.scp").string()); reader.Next(); ++i) {
    const std::string& utt = reader.key();
    const Matrix stored = reader.value().ToMatrix();
    const audio::Audio audio = audio::Decode(data.wav_scp.at(utt), {16000});
    const Matrix direct =
        mfcc.Compute(audio.samples.data(), static_cast<std::int64_t>(audio.samples.size()), DitherSeed(utt));
    ASSERT_EQ(stored.cols(), 30);
    EXPECT_EQ(stored, features::CompressedMatrix::Compress(direct).Decompress()) << utt;
    EXPECT_EQ(stored.rows(), data.utt2num_frames.at(utt)) << utt;
    // snip-edges=false: floor((N + 80) / 160) frames.
    EXPECT_EQ(stored.rows(), static_cast<std::int64_t>((audio.samples.size() + 80) / 160)) << utt;

    const std::vector<float> vad = features::ReadKaldiVector(vads[i].second);
    ASSERT_EQ(static_cast<std::int64_t>(vad.size()), stored.rows()) << utt;
    for (float v : vad) ASSERT_TRUE(v == 0.0f || v == 1.0f) << utt;
    EXPECT_EQ(vad, features::ComputeVadEnergy(features::VadOptions::VoxcelebV2(), stored)) << utt;
    for (float v : vad) voiced += v == 1.0f;
    frames += vad.size();
  }
  EXPECT_EQ(i, 9u);
  EXPECT_GT(voiced, frames / 4);  // bursts are voiced, gaps are not
  EXPECT_LT(voiced, frames);

  // Artifacts of both stages, tied to their stage rows.
  db::Database database(db::Database::DefaultPath(s.output));
  const auto stages = database.Stages(run_id);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].status, db::RunStatus::kFinished);
  EXPECT_EQ(stages[1].status, db::RunStatus::kFinished);
  std::map<std::string, std::set<std::string>> by_kind;
  for (const auto& a : database.Artifacts(run_id)) {
    by_kind[a.record.kind].insert(stdfs::path(a.record.path).filename().string());
    ASSERT_TRUE(a.record.stage_id.has_value());
    EXPECT_EQ(*a.record.stage_id, a.record.kind == "list" ? stages[0].id : stages[1].id) << a.record.path;
    EXPECT_GT(a.record.bytes, 0) << a.record.path;
  }
  // voxceleb1 and voxceleb1_cat (whose per-video lists are in cat/).
  EXPECT_EQ(by_kind["list"], (std::set<std::string>{"cat", "spk2utt", "utt2spk", "veri_test.txt", "wav.scp"}));
  EXPECT_EQ(by_kind["features"], (std::set<std::string>{"feats.scp", "mfcc.ark", "utt2num_frames"}));
  EXPECT_EQ(by_kind["vad"], (std::set<std::string>{"vad.ark", "vad.scp"}));

  // No temporary files are left behind.
  for (const auto& e : stdfs::recursive_directory_iterator(s.output)) {
    EXPECT_FALSE(Contains(e.path().filename().string(), ".tmp")) << e.path();
  }
}

TEST(VoxcelebXvectorStagesTest, RerunsAreBitIdenticalWhateverTheThreadCount) {
  TempDir dir("determinism");
  MakeVox1(dir / "vox1");
  AddBadFiles(dir / "vox1");
  Experiment s = MakeExperiment(dir);
  RunStages(s);
  const stdfs::path ds = s.output / "datasets/voxceleb1";
  std::map<std::string, std::string> first;
  for (const char* f : {"features/mfcc.ark", "features/vad.ark", "lists/feats.scp", "lists/vad.scp",
                        "lists/utt2num_frames", "lists/utt2spk", "lists/wav.scp", "lists/skipped_utterances"}) {
    first[f] = fs::ReadFile(ds / f);
  }
  s.settings->common().computing.feature_extraction_workers = 1;
  RunStages(s);
  for (const auto& [f, bytes] : first) EXPECT_EQ(fs::ReadFile(ds / f), bytes) << f;
  s.settings->common().computing.feature_extraction_workers = 16;
  RunStages(s);
  for (const auto& [f, bytes] : first) EXPECT_EQ(fs::ReadFile(ds / f), bytes) << f;

  // Stage 1 alone on its own output (skipped utterances already gone from the lists) gives the
  // same features again.
  s.settings->recipe().start_stage = 1;
  RunStages(s);
  EXPECT_EQ(fs::ReadFile(ds / "features/mfcc.ark"), first["features/mfcc.ark"]);
  EXPECT_EQ(fs::ReadFile(ds / "lists/feats.scp"), first["lists/feats.scp"]);
}

TEST(VoxcelebXvectorStagesTest, BadAudioIsSkippedListedAndRemovedFromTheLists) {
  TempDir dir("bad_audio");
  MakeVox1(dir / "vox1");
  AddBadFiles(dir / "vox1");
  Experiment s = MakeExperiment(dir);
  s.settings->recipe().end_stage = 0;
  RunStages(s);
  const stdfs::path lists = s.output / "datasets/voxceleb1/lists";
  EXPECT_EQ(data::DataDir::Load(lists).wav_scp.size(), 12u);  // stage 0 does not decode

  s.settings->recipe().start_stage = 1;
  s.settings->recipe().end_stage = 1;
  const std::int64_t run_id = RunStages(s);
  const data::Table skipped = data::ReadTable(lists / "skipped_utterances", data::ValueFormat::kRestOfLine);
  ASSERT_EQ(Keys(skipped),
            (std::vector<std::string>{"id10001-vidA-00009", "id10002-vidB-00003", "id10002-vidB-00004"}));
  // Each reason names the file.
  EXPECT_TRUE(Contains(skipped.at("id10001-vidA-00009"), "id10001/vidA/00009.wav")) << skipped.at("id10001-vidA-00009");
  EXPECT_TRUE(Contains(skipped.at("id10002-vidB-00003"), "id10002/vidB/00003.wav")) << skipped.at("id10002-vidB-00003");
  EXPECT_TRUE(Contains(skipped.at("id10002-vidB-00004"), "id10002/vidB/00004.wav")) << skipped.at("id10002-vidB-00004");

  const data::DataDir data = data::DataDir::Load(lists);
  EXPECT_EQ(data.wav_scp.size(), 9u);
  EXPECT_EQ(Keys(data.utt2spk), Keys(data.wav_scp));
  EXPECT_EQ(Keys(data.utt2num_frames), Keys(data.wav_scp));
  EXPECT_EQ(Keys(features::ReadScpFile((lists / "feats.scp").string())), Keys(data.wav_scp));
  EXPECT_EQ(Keys(features::ReadScpFile((lists / "vad.scp").string())), Keys(data.wav_scp));
  for (const auto& [spk, utts] : data::ReadSpk2Utt(lists / "spk2utt")) {
    for (const auto& utt : utts) EXPECT_EQ(skipped.count(utt), 0u) << utt;
  }
  // skipped_utterances is recorded as a list artifact.
  db::Database database(db::Database::DefaultPath(s.output));
  bool recorded = false;
  for (const auto& a : database.Artifacts(run_id)) recorded |= Contains(a.record.path, "skipped_utterances");
  EXPECT_TRUE(recorded);
}

// Writes `values` (int16 range / 32768, i.e. [-1, 1) is full scale) as an IEEE-float WAV file.
void WriteFloatWav(const stdfs::path& path, const std::vector<float>& values) {
  SF_INFO info{};
  info.samplerate = 16000;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_FLOAT;
  stdfs::create_directories(path.parent_path());
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  ASSERT_NE(f, nullptr) << path;
  sf_writef_float(f, values.data(), static_cast<sf_count_t>(values.size()));
  sf_close(f);
}

// Float WAV files with NaN, infinite or absurdly large samples are skipped and listed like every
// other bad file, with the file named; they do not abort the dataset.
TEST(VoxcelebXvectorStagesTest, CorruptFloatAudioIsSkippedAndListed) {
  TempDir dir("nan_audio");
  MakeVox1(dir / "vox1");
  std::vector<float> values = SpeechLike(1.0, 16000, 7);
  for (float& v : values) v /= 32768.0f;
  values[8000] = std::nanf("");
  WriteFloatWav(dir / "vox1/wav/id10002/vidB/00005.wav", values);
  values[8000] = 1e30f;
  WriteFloatWav(dir / "vox1/wav/id10002/vidB/00006.wav", values);
  values[8000] = 0.5f;
  WriteFloatWav(dir / "vox1/wav/id10002/vidB/00007.wav", values);  // a good float file
  Experiment s = MakeExperiment(dir);
  RunStages(s);
  const stdfs::path lists = s.output / "datasets/voxceleb1/lists";
  const data::Table skipped = data::ReadTable(lists / "skipped_utterances", data::ValueFormat::kRestOfLine);
  ASSERT_EQ(Keys(skipped), (std::vector<std::string>{"id10002-vidB-00005", "id10002-vidB-00006"}));
  EXPECT_TRUE(Contains(skipped.at("id10002-vidB-00005"), "id10002/vidB/00005.wav")) << skipped.at("id10002-vidB-00005");
  EXPECT_TRUE(Contains(skipped.at("id10002-vidB-00005"), "is NaN")) << skipped.at("id10002-vidB-00005");
  EXPECT_TRUE(Contains(skipped.at("id10002-vidB-00006"), "1024 times full scale")) << skipped.at("id10002-vidB-00006");
  const data::DataDir data = data::DataDir::Load(lists);
  EXPECT_EQ(data.wav_scp.size(), 10u);  // 9 + the good float file
  EXPECT_EQ(data.utt2num_frames.count("id10002-vidB-00007"), 1u);
}

// Features of an earlier complete run survive a re-extraction that fails: the old lists and
// archives are replaced only once the new ones are complete, and no temporary file is left.
TEST(VoxcelebXvectorStagesTest, FailedReExtractionKeepsThePreviousCompleteFeatures) {
  TempDir dir("keep_old");
  MakeVox1(dir / "vox1");
  Experiment s = MakeExperiment(dir);
  RunStages(s);
  const stdfs::path ds = s.output / "datasets/voxceleb1";
  std::map<std::string, std::string> before;
  for (const char* f : {"features/mfcc.ark", "features/vad.ark", "lists/feats.scp", "lists/vad.scp",
                        "lists/utt2num_frames", "lists/skipped_utterances", "lists/wav.scp"}) {
    before[f] = fs::ReadFile(ds / f);
  }
  stdfs::remove_all(dir / "vox1/wav");  // every utterance now fails
  s.settings->recipe().start_stage = 1;
  const std::string message = ErrorOf<StageError>([&] { RunStages(s); });
  EXPECT_TRUE(Contains(message, "no utterance could be used")) << message;
  for (const auto& [f, bytes] : before) EXPECT_EQ(fs::ReadFile(ds / f), bytes) << f;
  for (const auto& e : stdfs::recursive_directory_iterator(ds)) {
    EXPECT_FALSE(Contains(e.path().filename().string(), ".tmp.")) << e.path();
  }
}

TEST(VoxcelebXvectorStagesTest, DatasetWhoseEveryFileFailsIsAStageError) {
  TempDir dir("all_bad");
  fs::WriteFileAtomic(dir / "vox1/wav/id1/v/00001.wav", "");
  fs::WriteFileAtomic(dir / "vox1/wav/id1/v/00002.wav", "RIFF");
  Experiment s = MakeExperiment(dir);
  const std::string message = ErrorOf<StageError>([&] { RunStages(s); });
  EXPECT_TRUE(Contains(message, "voxceleb1: no utterance could be used (2 skipped)")) << message;
  // Nothing is presented as complete.
  const stdfs::path lists = s.output / "datasets/voxceleb1/lists";
  EXPECT_FALSE(stdfs::exists(lists / "feats.scp"));
  EXPECT_FALSE(stdfs::exists(lists / "vad.scp"));
  EXPECT_FALSE(stdfs::exists(lists / "utt2num_frames"));
  EXPECT_FALSE(stdfs::exists(s.output / "datasets/voxceleb1/features/mfcc.ark"));
}

TEST(VoxcelebXvectorStagesTest, UnknownOrMissingDatasetIsADataErrorBeforeAnythingIsWritten) {
  TempDir dir("unknown");
  MakeVox1(dir / "vox1");
  {
    Experiment s = MakeExperiment(dir);
    s.settings->recipe().preparation_datasets = std::vector<std::string>{"voxceleb1", "voxceleb3"};
    const std::string message = ErrorOf<DataError>([&] { RunStages(s); });
    EXPECT_TRUE(Contains(message, "'voxceleb3'")) << message;
    EXPECT_TRUE(Contains(message, "voxceleb1, voxceleb2")) << message;  // what is known
    EXPECT_FALSE(stdfs::exists(s.output / "datasets")) << "nothing may be written";
  }
  {
    Experiment s = MakeExperiment(dir);
    s.settings->recipe().preparation_datasets = std::vector<std::string>{"voxceleb1", "voxceleb2"};
    const std::string message = ErrorOf<DataError>([&] { RunStages(s); });
    EXPECT_TRUE(Contains(message, "'voxceleb2', which paths.datasets does not give")) << message;
    EXPECT_TRUE(Contains(message, "paths.datasets has: voxceleb1")) << message;
    EXPECT_FALSE(stdfs::exists(s.output / "datasets"));
  }
  {
    Experiment s = MakeExperiment(dir);
    s.settings->recipe().preparation_datasets = std::vector<std::string>{"voxceleb2_cat"};
    EXPECT_TRUE(Contains(ErrorOf<DataError>([&] { RunStages(s); }), "prepared together with 'voxceleb2'"));
  }
  {
    // None prepares every dataset of paths.datasets the recipe knows; others are left alone.
    const auto jobs =
        ResolvePreparationJobs(std::nullopt, {{"musan", "/m"}, {"voxceleb2", "v2"}, {"voxceleb1", "/v1"}});
    ASSERT_EQ(jobs.size(), 2u);
    EXPECT_EQ(jobs[0].name, "voxceleb2");
    EXPECT_EQ(jobs[0].corpus, stdfs::current_path() / "v2");
    EXPECT_EQ(jobs[1].name, "voxceleb1");
    EXPECT_TRUE(Contains(ErrorOf<DataError>([] {
                           ResolvePreparationJobs(std::nullopt, {{"example", "/x"}});
                         }),
                         "names none of the datasets this recipe can prepare"));
  }
  {
    // Stage 1 for a dataset that has no lists: nothing is touched, not even the other dataset.
    Experiment s = MakeExperiment(dir);
    s.settings->recipe().end_stage = 0;
    RunStages(s);
    s.settings->recipe().start_stage = 1;
    s.settings->recipe().end_stage = 1;
    s.settings->recipe().feature_extraction_datasets = {"voxceleb1", "voxceleb2_cat"};
    const std::string message = ErrorOf<DataError>([&] { RunStages(s); });
    EXPECT_TRUE(Contains(message, "'voxceleb2_cat'")) << message;
    EXPECT_TRUE(Contains(message, "prepare the dataset first")) << message;
    EXPECT_FALSE(stdfs::exists(s.output / "datasets/voxceleb1/features"));
    EXPECT_FALSE(stdfs::exists(s.output / "datasets/voxceleb1/lists/feats.scp"));
  }
}

TEST(VoxcelebXvectorStagesTest, SamplingRateMustAgreeWithMfccConf) {
  TempDir dir("rate");
  MakeVox1(dir / "vox1");
  Experiment s = MakeExperiment(dir);
  s.settings->common().features.sampling_rate = 8000;
  const std::string message = ErrorOf<StageError>([&] { RunStages(s); });
  EXPECT_TRUE(Contains(message, "features.sampling_rate = 8000 disagrees with --sample-frequency=16000")) << message;
  EXPECT_FALSE(stdfs::exists(s.output / "datasets/voxceleb1/lists/feats.scp"));
}

TEST(VoxcelebXvectorStagesTest, FloatFeaturesWhenNotCompressed) {
  TempDir dir("float");
  MakeVox1(dir / "vox1");
  Experiment s = MakeExperiment(dir);
  s.settings->recipe().end_stage = 0;
  RunStages(s);
  FeatureExtractionOptions options = FeatureOptionsFromSettings(s.settings->common());
  EXPECT_TRUE(options.compress);  // the stage's choice
  options.compress = false;
  options.progress = base::ProgressMode::kSilent;
  const FeatureExtractionReport report = ExtractDatasetFeatures("voxceleb1", s.output / "datasets", options);
  EXPECT_EQ(report.utterances, 9u);
  EXPECT_TRUE(report.skipped.empty());
  EXPECT_EQ(report.resampled, 1u);  // the 8 kHz file
  // 1 + 0.25·(seed % 5) s for seeds 1..8, and the 1.5 s 8 kHz file.
  EXPECT_NEAR(report.audio_seconds, 1.25 + 1.5 + 1.75 + 2.0 + 1.0 + 1.25 + 1.5 + 1.75 + 1.5, 1e-6);
  EXPECT_GT(report.RealTimeFactor(), 0.0);
  EXPECT_TRUE(Contains(report.Summary(), "voxceleb1: 9 utterances, 0 skipped, 0.00 h of audio in "))
      << report.Summary();

  const features::Mfcc mfcc(options.mfcc);
  const stdfs::path lists = s.output / "datasets/voxceleb1/lists";
  const data::DataDir data = data::DataDir::Load(lists);
  for (features::TableReader reader("scp:" + (lists / "feats.scp").string()); reader.Next();) {
    const audio::Audio audio = audio::Decode(data.wav_scp.at(reader.key()), {16000});
    EXPECT_EQ(
        reader.value().ToMatrix(),
        mfcc.Compute(audio.samples.data(), static_cast<std::int64_t>(audio.samples.size()), DitherSeed(reader.key())));
  }
}

TEST(VoxcelebXvectorStagesTest, ATrialListOfOneClassIsAnErrorNamingIt) {
  TempDir dir("one_class");
  MakeVox1(dir / "vox1");
  fs::WriteFileAtomic(dir / "vox1" / "veri_test.txt",
                      "1 id10001/vidA/00001.wav id10001/vidB/00002.wav\n"
                      "1 id10002/vidB/00002.wav id10002/vidA/00001.wav\n");
  Experiment s = MakeExperiment(dir);
  s.settings->recipe().end_stage = 0;
  const std::string message = ErrorOf<Error>([&] { RunStages(s); });
  EXPECT_TRUE(Contains(message, (dir / "vox1" / "veri_test.txt").string() +
                                    ": 2 target, 0 non-target trials: a trial list needs both"))
      << message;
}

TEST(VoxcelebXvectorStagesTest, ALostCheckpointIsNamedNeverReplacedByAnOlderOne) {
  TempDir dir("lost_checkpoint");
  Experiment s = MakeExperiment(dir);
  db::Database database(db::Database::DefaultPath(s.output));
  db::RunInfo info;
  info.recipe = "voxceleb/xvector";
  info.config = "test";
  info.output_folder = s.output.string();
  const std::int64_t training_run = database.BeginRun(info);
  recipe::RunContext context("voxceleb/xvector", "test", *s.settings, s.output, &database, training_run);
  const stdfs::path networks = context.system_folder() / "networks";
  EXPECT_EQ(shared::LastTrainedEpoch(context, networks), 0);
  for (int epoch = 1; epoch <= 3; ++epoch) {
    fs::WriteFileAtomic(train::CheckpointPath(networks, epoch), "weights " + std::to_string(epoch));
    context.RecordArtifact(train::CheckpointPath(networks, epoch), "checkpoint");
  }
  EXPECT_EQ(shared::LastTrainedEpoch(context, networks), 3);
  // A lost middle checkpoint hides nothing: epoch 3 is still the newest.
  stdfs::remove(train::CheckpointPath(networks, 2));
  EXPECT_EQ(shared::LastTrainedEpoch(context, networks), 3);
  // A lost last one is an error naming it, not a silent step back to epoch 1.
  stdfs::remove(train::CheckpointPath(networks, 3));
  const std::string error = ErrorOf<DataError>([&] { shared::LastTrainedEpoch(context, networks); });
  EXPECT_TRUE(Contains(error, fmt::format("{}: missing: run {} recorded training it, and the newest checkpoint "
                                          "here is epoch.1.pt",
                                          train::CheckpointPath(networks, 3).string(), training_run)))
      << error;
  // A newer run that trained the folder again decides: it wrote epoch 1 only.
  const std::int64_t retraining_run = database.BeginRun(info);
  recipe::RunContext again("voxceleb/xvector", "test", *s.settings, s.output, &database, retraining_run);
  again.RecordArtifact(train::CheckpointPath(networks, 1), "checkpoint");
  EXPECT_EQ(shared::LastTrainedEpoch(again, networks), 1);
  // What a stage used is recorded with its checksum.
  shared::RecordCheckpointsUsed(again, {train::CheckpointPath(networks, 1)});
  const auto used = database.ArtifactsOfKind("checkpoint_used");
  ASSERT_EQ(used.size(), 1u);
  EXPECT_EQ(used[0].record.path, train::CheckpointPath(networks, 1).string());
  EXPECT_EQ(used[0].record.checksum, fs::FileChecksum(train::CheckpointPath(networks, 1)));
}

TEST(VoxcelebXvectorStagesTest, EveryRecipeOfTheCatalogHasAStageRunner) {
  for (const auto* r : recipes::AllRecipes()) {
    ASSERT_NO_THROW(recipes::StageRunnerFor(*r)) << r->name();
    for (const auto& stage : r->stages()) {
      EXPECT_TRUE(recipes::StageRunnerFor(*r).HasStage(stage)) << r->name() << " stage " << stage.number;
    }
  }
  EXPECT_NE(dynamic_cast<const XvectorStages*>(&recipes::StageRunnerFor(recipes::FindRecipe("voxceleb/xvector"))),
            nullptr);
  // A stage number the recipe does not have is an error, not a silent no-op.
  TempDir dir("unknown_stage");
  Experiment s = MakeExperiment(dir);
  recipe::RunContext context("voxceleb/xvector", "test", *s.settings, s.output, nullptr, 0);
  const recipe::StageInfo stage{4, "four", "", false};
  EXPECT_FALSE(XvectorStages().HasStage(stage));
  EXPECT_TRUE(Contains(ErrorOf<StageError>([&] { XvectorStages().RunStage(stage, context); }),
                       "voxceleb/xvector has no stage 4"));
}

TEST(VoxcelebXvectorStagesTest, VoxCeleb2AndConcatenatedVideos) {
  if (!HaveProgram("ffmpeg")) GTEST_SKIP() << "ffmpeg not found";
  TempDir dir("vox2");
  // <root>/dev/aac/<spk>/<video>/<file>.m4a, encoded from generated WAVs.
  unsigned seed = 11;
  for (const char* rel : {"dev/aac/id00012/vid1/00001", "dev/aac/id00012/vid1/00002", "dev/aac/id00015/v/00001",
                          "test/aac/id09999/t/00001"}) {
    const stdfs::path wav = dir / "tmp.wav";
    audio::WriteWav(wav, SpeechLike(1.0, 16000, seed++), 16000);
    const stdfs::path m4a = dir / "vox2" / (std::string(rel) + ".m4a");
    stdfs::create_directories(m4a.parent_path());
    const std::string command =
        "ffmpeg -nostdin -y -v error -i '" + wav.string() + "' -c:a aac -b:a 64k '" + m4a.string() + "'";
    ASSERT_EQ(std::system(command.c_str()), 0) << command;
  }
  Experiment s = MakeExperiment(dir);
  s.settings->common().paths.datasets = {{"voxceleb2", (dir / "vox2").string()}};
  s.settings->recipe().preparation_datasets = std::nullopt;  // all the recipe knows
  s.settings->recipe().feature_extraction_datasets = {"voxceleb2", "voxceleb2_cat"};
  RunStages(s);

  const data::DataDir single = data::DataDir::Load(s.output / "datasets/voxceleb2/lists");
  const data::DataDir cat = data::DataDir::Load(s.output / "datasets/voxceleb2_cat/lists");
  EXPECT_EQ(Keys(single.utt2num_frames), (std::vector<std::string>{"id00012-vid1-00001", "id00012-vid1-00002",
                                                                   "id00015-v-00001", "id09999-t-00001"}));
  EXPECT_EQ(Keys(cat.utt2num_frames), (std::vector<std::string>{"id00012-vid1", "id00015-v", "id09999-t"}));
  EXPECT_EQ(Keys(features::ReadScpFile((s.output / "datasets/voxceleb2_cat/lists/vad.scp").string())),
            Keys(cat.utt2spk));
  // A video is its files decoded one after another: about the sum of their frames (AAC adds
  // encoder padding per file, so not exactly).
  const std::int64_t parts =
      single.utt2num_frames.at("id00012-vid1-00001") + single.utt2num_frames.at("id00012-vid1-00002");
  EXPECT_NEAR(static_cast<double>(cat.utt2num_frames.at("id00012-vid1")), static_cast<double>(parts), 1.0);
  for (const auto& [utt, n] : single.utt2num_frames) EXPECT_NEAR(static_cast<double>(n), 100.0, 5.0) << utt;
}


// A tiny MUSAN (two recordings per set) and RIRS_NOISES (one RIR per room set: a direct path
// and a decaying tail) for stage 2.
void MakeNoiseCorpora(const stdfs::path& musan, const stdfs::path& rirs) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 2; ++i) {
    std::vector<float> noise(static_cast<std::size_t>(4000 + 3000 * i));
    for (float& v : noise) v = 800.0f * normal(rng);
    audio::WriteWav(musan / "noise/free-sound" / fmt::format("noise-free-sound-000{}.wav", i), noise, 16000);
    std::vector<float> music(12000);
    for (std::size_t t = 0; t < music.size(); ++t) {
      music[t] = static_cast<float>(3000.0 * std::sin(2 * M_PI * (440.0 + 110.0 * i) * t / 16000.0));
    }
    audio::WriteWav(musan / "music/fma" / fmt::format("music-fma-000{}.wav", i), music, 16000);
    audio::WriteWav(musan / "speech/librivox" / fmt::format("speech-librivox-000{}.wav", i),
                    SpeechLike(2.5, 16000, 40 + static_cast<unsigned>(i)), 16000);
  }
  for (const auto& [room, decay] : {std::pair<std::string, double>{"smallroom", 0.01}, {"mediumroom", 0.03}}) {
    std::vector<float> rir(3200, 0.0f);
    for (std::size_t t = 40; t < rir.size(); ++t) {
      rir[t] = static_cast<float>(6000.0 * normal(rng) * std::exp(-static_cast<double>(t) / (decay * 16000.0)));
    }
    rir[24] = 30000.0f;
    audio::WriteWav(rirs / "simulated_rirs" / room / "Room001/Room001-00001.wav", rir, 16000);
    fs::WriteFileAtomic(rirs / "simulated_rirs" / room / "rir_list",
                        fmt::format("--rir-id {0}-Room001-00001 --room-id {0}-Room001 "
                                    "RIRS_NOISES/simulated_rirs/{0}/Room001/Room001-00001.wav\n",
                                    room));
  }
}

TEST(VoxcelebXvectorStagesTest, AugmentationMakesCopiesAndTheCombinedDataset) {
  TempDir dir("augment");
  MakeVox1(dir / "vox1");
  MakeNoiseCorpora(dir / "musan", dir / "RIRS_NOISES");
  Experiment s = MakeExperiment(dir);
  s.settings->common().paths.musan_folder = (dir / "musan").string();
  s.settings->common().paths.kaldi_recipe_folder = dir.path().string();  // RIRS_NOISES found there
  s.settings->recipe().end_stage = 2;
  s.settings->recipe().augmentation_datasets = {{"voxceleb1", 3}};
  const std::int64_t run_id = RunStages(s);

  const stdfs::path root = s.output / "datasets";
  const data::DataDir clean = data::DataDir::Load(root / "voxceleb1/lists");
  const data::DataDir aug = data::DataDir::Load(root / "voxceleb1_aug_subset/lists");
  const data::DataDir combined = data::DataDir::Load(root / "voxceleb1_combined/lists");
  ASSERT_EQ(clean.utt2spk.size(), 9u);
  // 9 x (3 - 1) copies drawn from the 36, each of a clean utterance, with its speaker and VAD.
  ASSERT_EQ(aug.utt2spk.size(), 18u);
  EXPECT_EQ(aug.feats_scp.size(), 18u);
  EXPECT_TRUE(aug.wav_scp.empty());
  std::map<std::string, int> kinds;
  for (const auto& [id, spk] : aug.utt2spk) {
    const std::size_t dash = id.rfind('-');
    const std::string utt = id.substr(0, dash), kind = id.substr(dash + 1);
    ++kinds[kind];
    ASSERT_TRUE(clean.utt2spk.count(utt)) << id;
    EXPECT_EQ(spk, clean.utt2spk.at(utt));
    EXPECT_EQ(aug.vad_scp.at(id), clean.vad_scp.at(utt));
    EXPECT_EQ(aug.utt2num_frames.at(id), clean.utt2num_frames.at(utt));
  }
  EXPECT_EQ(Keys(kinds), (std::vector<std::string>{"babble", "music", "noise", "reverb"})) << kinds.size();
  EXPECT_EQ(combined.utt2spk.size(), 27u);
  EXPECT_EQ(combined.feats_scp.size(), 27u);
  EXPECT_EQ(combined.vad_scp.size(), 27u);
  for (const auto& [utt, rx] : clean.feats_scp) EXPECT_EQ(combined.feats_scp.at(utt), rx);
  for (const auto& [id, rx] : aug.feats_scp) EXPECT_EQ(combined.feats_scp.at(id), rx);

  // Each stored copy is the MFCC of the clean audio mixed as its `augmentation` line says:
  // recomputed here from the same files with the library's wav-reverberate.
  const data::Table descriptions =
      data::ReadTable(root / "voxceleb1_aug_subset/lists/augmentation", data::ValueFormat::kRestOfLine);
  ASSERT_EQ(Keys(descriptions), Keys(aug.utt2spk));
  const features::Mfcc mfcc(features::ReadKaldiConfig<features::MfccOptions>(s.mfcc_conf.string()));
  int checked = 0;
  for (features::TableReader reader("scp:" + (root / "voxceleb1_aug_subset/lists/feats.scp").string());
       reader.Next();) {
    const std::string& id = reader.key();
    const std::string utt = id.substr(0, id.rfind('-'));
    const Matrix stored = reader.value().ToMatrix();
    const Matrix clean_feats = features::ReadKaldiMatrix(clean.feats_scp.at(utt));
    ASSERT_EQ(stored.rows(), clean_feats.rows());
    EXPECT_FALSE(stored == clean_feats) << id;
    const std::string& what = descriptions.at(id);
    const std::vector<float> speech = audio::Decode(clean.wav_scp.at(utt), {16000}).samples;
    std::vector<float> mixed;
    std::deque<std::vector<float>> noises;  // stable addresses for AdditiveSignal
    std::vector<augment::AdditiveSignal> additive;
    std::smatch m;
    if (std::regex_match(what, m, std::regex(R"(reverb (smallroom|mediumroom) \1-Room001-00001)"))) {
      const auto rir = audio::DecodeFile(dir / "RIRS_NOISES/simulated_rirs" / m[1].str() / "Room001/Room001-00001.wav")
                           .samples;
      mixed = augment::Reverberate(speech, &rir, {}, 16000);
    } else if (what.rfind("music ", 0) == 0 || what.rfind("babble ", 0) == 0) {
      const bool music = what[0] == 'm';
      const std::regex item(R"( ((music-fma|speech-librivox)-000[01])@([0-9]+)dB)");
      for (auto it = std::sregex_iterator(what.begin(), what.end(), item); it != std::sregex_iterator(); ++it) {
        const stdfs::path file =
            dir / "musan" / (music ? "music/fma" : "speech/librivox") / ((*it)[1].str() + ".wav");
        noises.push_back(augment::RepeatToLength(audio::DecodeFile(file).samples, speech.size()));
        additive.push_back({&noises.back(), std::stod((*it)[3]), 0.0});
      }
      if (music) {
        EXPECT_EQ(additive.size(), 1u) << what;
      } else {
        EXPECT_GE(additive.size(), 3u) << what;
        EXPECT_LE(additive.size(), 7u) << what;
      }
      mixed = augment::Reverberate(speech, nullptr, additive, 16000);
    } else {
      const std::regex item(R"( (noise-free-sound-000[01])@([0-9]+)dB\+([0-9.]+)s)");
      for (auto it = std::sregex_iterator(what.begin(), what.end(), item); it != std::sregex_iterator(); ++it) {
        noises.push_back(audio::DecodeFile(dir / "musan/noise/free-sound" / ((*it)[1].str() + ".wav")).samples);
        additive.push_back({&noises.back(), std::stod((*it)[2]), std::stod((*it)[3])});
      }
      ASSERT_FALSE(additive.empty()) << what;
      mixed = augment::Reverberate(speech, nullptr, additive, 16000);
    }
    augment::QuantizeToInt16(mixed);  // wav-reverberate's output is a 16-bit WAV
    const Matrix expected = mfcc.Compute(mixed.data(), static_cast<std::int64_t>(mixed.size()), DitherSeed(id));
    EXPECT_EQ(stored, features::CompressedMatrix::Compress(expected).Decompress()) << id << ": " << what;
    ++checked;
  }
  EXPECT_EQ(checked, 18);

  db::Database database(db::Database::DefaultPath(s.output));
  const auto stages = database.Stages(run_id);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[2].status, db::RunStatus::kFinished);

  // Stage 2 again, with one thread: the same files.
  const std::string ark = fs::ReadFile(root / "voxceleb1_aug_subset/features/mfcc.ark");
  const std::string lines = fs::ReadFile(root / "voxceleb1_aug_subset/lists/augmentation");
  s.settings->recipe().start_stage = 2;
  s.settings->common().computing.feature_extraction_workers = 1;
  RunStages(s);
  EXPECT_EQ(fs::ReadFile(root / "voxceleb1_aug_subset/features/mfcc.ark"), ark);
  EXPECT_EQ(fs::ReadFile(root / "voxceleb1_aug_subset/lists/augmentation"), lines);

  // Factor 5: all four copies of every utterance; factor 1: the combined data is the clean data.
  s.settings->recipe().augmentation_datasets = {{"voxceleb1", 5}};
  RunStages(s);
  EXPECT_EQ(data::DataDir::Load(root / "voxceleb1_aug_subset/lists").utt2spk.size(), 36u);
  EXPECT_EQ(data::DataDir::Load(root / "voxceleb1_combined/lists").utt2spk.size(), 45u);
  s.settings->recipe().augmentation_datasets = {{"voxceleb1", 1}};
  RunStages(s);
  EXPECT_FALSE(stdfs::exists(root / "voxceleb1_aug_subset/lists/feats.scp"));
  EXPECT_FALSE(stdfs::exists(root / "voxceleb1_aug_subset/features/mfcc.ark"));
  const data::DataDir only_clean = data::DataDir::Load(root / "voxceleb1_combined/lists");
  EXPECT_EQ(only_clean.feats_scp, clean.feats_scp);
  EXPECT_EQ(only_clean.utt2spk, clean.utt2spk);
}

TEST(VoxcelebXvectorStagesTest, AugmentationNamesWhatIsMissing) {
  TempDir dir("augment_missing");
  MakeVox1(dir / "vox1");
  MakeNoiseCorpora(dir / "musan", dir / "rirs");
  Experiment s = MakeExperiment(dir);
  RunStages(s);  // stages 0 and 1
  s.settings->recipe().start_stage = 2;
  s.settings->recipe().end_stage = 2;
  s.settings->recipe().augmentation_datasets = {{"voxceleb1", 2}};
  s.settings->common().paths.musan_folder = (dir / "musan").string();
  s.settings->common().paths.kaldi_recipe_folder = (dir / "kaldi").string();
  EXPECT_TRUE(Contains(ErrorOf<DataError>([&] { RunStages(s); }),
                       (dir / "kaldi/RIRS_NOISES/simulated_rirs/smallroom/rir_list").string() +
                           ": missing; paths.rirs_folder must be the unpacked RIRS_NOISES folder"));
  s.settings->common().paths.rirs_folder = (dir / "rirs").string();
  s.settings->common().paths.musan_folder = (dir / "nomusan").string();
  EXPECT_TRUE(Contains(ErrorOf<DataError>([&] { RunStages(s); }), "paths.musan_folder is not a folder"));
  s.settings->common().paths.musan_folder = (dir / "musan").string();
  s.settings->recipe().augmentation_datasets = {{"voxceleb2", 2}};
  EXPECT_TRUE(Contains(ErrorOf<DataError>([&] { RunStages(s); }), "voxceleb2/lists"));
  EXPECT_FALSE(stdfs::exists(s.output / "datasets/voxceleb2_combined"));
  // Features are required: stage 1 not run for the dataset.
  stdfs::remove(s.output / "datasets/voxceleb1/lists/feats.scp");
  s.settings->recipe().augmentation_datasets = {{"voxceleb1", 2}};
  EXPECT_TRUE(Contains(ErrorOf<DataError>([&] { RunStages(s); }),
                       "feats.scp is missing or empty; stage 2 augments datasets that have their features"));
}

}  // namespace
}  // namespace asv::recipes::voxceleb_xvector
