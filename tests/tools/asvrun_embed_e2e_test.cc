// `asvrun embed` and `asvrun export` end to end: a tiny voxceleb/margin run (one epoch of the
// tiny ECAPA-TDNN of margin_tiny_configs.h on the tiny demo corpus, no fine-tuning), then the
// embeddings of `asvrun embed` with the run's model (by run id) of the trial utterances equal
// those its stage 8 wrote; the Kaldi ark/scp are read with asvcpp's Kaldi reader, the .npy header
// and rows are checked, bad audio is skipped and listed, and errors exit by kind. Also the
// WeSpeaker path: a model directory exported by the library goes through `asvrun export` and
// `asvrun embed`. Skipped when espeak-ng or ffmpeg is missing.
#include <cmath>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>

#include <gtest/gtest.h>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/features/kaldi_io.h"
#include "asvcpp/models/wespeaker_model.h"
#include "asvcpp/nnet/speaker_net.h"
#include "tests/build_paths.h"
#include "tests/tools/margin_tiny_configs.h"
#include "tests/tools/test_util.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

// The header and float32 rows of a 2-D .npy file; fails the test on a malformed header.
struct Npy {
  std::string header;
  std::vector<float> values;
};
Npy ReadNpy(const fs::path& path) {
  const std::string bytes = testing::Slurp(path);
  Npy npy;
  EXPECT_EQ(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)), 0);
  const std::size_t length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + length) % 64, 0u);
  npy.header = bytes.substr(10, length);
  EXPECT_EQ(npy.header.back(), '\n');
  npy.values.resize((bytes.size() - 10 - length) / 4);
  std::memcpy(npy.values.data(), bytes.data() + 10 + length, npy.values.size() * 4);
  return npy;
}

// max |a - b| of two matrices of the same shape (infinity when the shapes differ).
double MaxDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  double max_diff = 0;
  for (std::int64_t r = 0; r < a.rows(); ++r) {
    for (std::int64_t c = 0; c < a.cols(); ++c) {
      max_diff = std::max(max_diff, static_cast<double>(std::abs(a(r, c) - b(r, c))));
    }
  }
  return max_diff;
}

// Runs `args` with the first python3 that imports torch and yaml (PATH's, then Debian's);
// nullopt when there is none (tools/setup.sh installs python3-torch and python3-yaml).
std::optional<testing::CommandResult> RunPython(std::vector<std::string> args, const fs::path& cwd) {
  for (const std::string python : {"python3", "/usr/bin/python3"}) {
    args.insert(args.begin(), python);
    auto r = testing::RunCommand(args, cwd);
    args.erase(args.begin());
    if (r.err.find("ModuleNotFoundError") == std::string::npos && r.status != 127) return r;
  }
  return std::nullopt;
}

std::vector<std::string> Lines(const fs::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(AsvrunEmbedE2eTest, EmbedsAsStage8AndExports) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("embed_e2e");
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  dir.Write("configs/run_configs", testing::kConfigs);
  dir.Write("configs/init_config", testing::kInitConfig);
  const auto run = testing::RunCommand({ASV_ASVRUN,
                                        "voxceleb/margin",
                                        "tiny",
                                        "--run-configs",
                                        "configs/run_configs",
                                        "--set",
                                        "network.max_epochs=1",
                                        "--set",
                                        "recipe.lm_epochs=0",
                                        "--set",
                                        "recipe.lm_warm_up_epochs=0",
                                        "--set",
                                        "recipe.warm_up_epochs=0",
                                        "--set",
                                        "recipe.increase_start_epoch=1",
                                        "--set",
                                        "recipe.fix_start_epoch=1",
                                        "--set",
                                        "recipe.num_average=1",
                                        "--set",
                                        "recipe.training_trial_lists=[]",
                                        "--set",
                                        "recipe.aug_prob=0"},
                                       dir.path());
  ASSERT_EQ(run.status, 0) << run.err;

  // The trial utterances in stage 8's order, and one file that is not audio at the end.
  const auto stage8 = backend::ReadEmbeddings(dir / "out/tiny_system/embeddings/trial");
  ASSERT_GT(stage8.ids.size(), 2u);
  std::map<std::string, std::string> wav;
  for (const auto& line : Lines(dir / "out/datasets/voxceleb1/lists/wav.scp")) {
    const auto space = line.find(' ');
    wav[line.substr(0, space)] = line.substr(space + 1);
  }
  std::string scp;
  for (const auto& id : stage8.ids) scp += id + " " + wav.at(id) + "\n";
  dir.Write("not_audio.wav", "this is not audio");
  scp += "broken " + (dir / "not_audio.wav").string() + "\n";
  dir.Write("embed.scp", scp);

  const auto embed = testing::RunCommand(
      {ASV_ASVRUN, "embed", "--model", "1", "--db", "out/experiments.db", "--wav-scp", "embed.scp", "--out", "emb"},
      dir.path());
  ASSERT_EQ(embed.status, 0) << embed.out << embed.err;
  const auto mine = backend::ReadEmbeddings(dir / "emb/embeddings");
  ASSERT_EQ(mine.ids, stage8.ids);
  ASSERT_EQ(mine.vectors.cols(), stage8.vectors.cols());
  EXPECT_LE(MaxDiff(mine.vectors, stage8.vectors), 1e-6);
  EXPECT_EQ(mine.durations, stage8.durations);
  // Kaldi's reader reads the archive through the scp.
  const auto first = features::ReadKaldiVector(
      (dir / "emb/embeddings.ark").string() + ":" +
      Lines(dir / "emb/embeddings.scp")[0].substr(Lines(dir / "emb/embeddings.scp")[0].rfind(':') + 1));
  ASSERT_EQ(static_cast<std::int64_t>(first.size()), mine.vectors.cols());
  EXPECT_EQ(first[0], mine.vectors(0, 0));
  // The .npy: float32 rows in the order of utt_ids.txt.
  const auto npy = ReadNpy(dir / "emb/embeddings.npy");
  EXPECT_NE(npy.header.find("'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(mine.ids.size()) +
                            ", " + std::to_string(mine.vectors.cols()) + ")"),
            std::string::npos)
      << npy.header;
  ASSERT_EQ(npy.values.size(), static_cast<std::size_t>(mine.vectors.rows() * mine.vectors.cols()));
  EXPECT_EQ(npy.values[npy.values.size() - 1], mine.vectors(mine.vectors.rows() - 1, mine.vectors.cols() - 1));
  EXPECT_EQ(Lines(dir / "emb/utt_ids.txt"), mine.ids);
  const auto skipped = Lines(dir / "emb/skipped.txt");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped[0].rfind("broken ", 0), 0u) << skipped[0];
  EXPECT_NE(skipped[0].find("not_audio.wav"), std::string::npos) << skipped[0];

  // The run's model as ONNX graphs, with and without its front end; ONNX Runtime on the WAV file
  // of the first utterance gives asvrun embed's embedding.
  for (const bool with_frontend : {false, true}) {
    std::vector<std::string> args{ASV_ASVRUN, "export", "--model",    "1",    "--db",
                                  "out/experiments.db", "--format", "onnx", "--out",
                                  with_frontend ? "audio_in.onnx" : "feats_in.onnx"};
    if (with_frontend) args.push_back("--with-frontend");
    const auto onnx = testing::RunCommand(args, dir.path());
    ASSERT_EQ(onnx.status, 0) << onnx.err;
    EXPECT_NE(onnx.out.find(with_frontend ? "input waveform" : "input feats"), std::string::npos) << onnx.out;
  }
  const std::string onnxruntime_python = testing::OnnxRuntimePython();
  if (onnxruntime_python.empty()) {
    ADD_FAILURE() << "no ONNX Runtime: run tools/setup.sh";
  } else {
    dir.Write("onnx_spec.json", "{\"input\": \"waveform\", \"runs\": [{\"wav\": \"" + wav.at(stage8.ids[0]) +
                                    "\", \"output\": \"" + (dir / "onnx_out.f32").string() + "\"}]}");
    const auto ran = testing::RunCommand({onnxruntime_python,
                                          std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/deploy/run_onnx.py",
                                          "audio_in.onnx", "onnx_spec.json"},
                                         dir.path());
    ASSERT_EQ(ran.status, 0) << ran.err;
    const std::string bytes = testing::Slurp(dir / "onnx_out.f32");
    ASSERT_EQ(bytes.size(), static_cast<std::size_t>(mine.vectors.cols()) * sizeof(float));
    std::vector<float> got(static_cast<std::size_t>(mine.vectors.cols()));
    std::memcpy(got.data(), bytes.data(), bytes.size());
    double dot = 0, a = 0, b = 0, largest = 0;
    for (std::int64_t c = 0; c < mine.vectors.cols(); ++c) {
      const double x = got[static_cast<std::size_t>(c)], y = mine.vectors(0, c);
      dot += x * y;
      a += x * x;
      b += y * y;
      largest = std::max(largest, std::abs(x - y));
    }
    EXPECT_GE(dot / std::sqrt(a * b), 0.9999);
    EXPECT_LE(largest, 1e-4 * std::sqrt(b));
  }

  // Errors by kind: the command line (2), the data (3), the database (4). A tiny model with
  // recipe.channels has no WeSpeaker form (2, naming the setting).
  EXPECT_EQ(testing::RunCommand({ASV_ASVRUN, "embed", "--model", "1", "--db", "out/experiments.db", "--out", "e2"},
                                dir.path())
                .status,
            2);
  EXPECT_EQ(testing::RunCommand({ASV_ASVRUN, "embed", "--model", "nowhere", "--out", "e2", "x.wav"}, dir.path()).status,
            3);
  EXPECT_EQ(testing::RunCommand(
                {ASV_ASVRUN, "embed", "--model", "9", "--db", "out/experiments.db", "--out", "e2", "x.wav"}, dir.path())
                .status,
            4);
  const auto no_form = testing::RunCommand(
      {ASV_ASVRUN, "export", "--model", "out/tiny_system", "--format", "wespeaker", "--out", "exported"}, dir.path());
  EXPECT_EQ(no_form.status, 2) << no_form.err;
  EXPECT_NE(no_form.err.find("recipe.channels = 16"), std::string::npos) << no_form.err;

  // A WeSpeaker model directory through asvrun export and embed (16 kHz, 80 mel bins).
  auto net = nnet::MakeMarginNet("ECAPA_TDNN_c512", 80, 192, 5, nnet::MarginHeadOptions{});
  models::WespeakerConfig config;
  config.model = "ECAPA_TDNN_c512";
  config.embed_dim = 192;
  models::ExportWespeakerModel(dir / "zoo_model", *net, config);
  const auto exported =
      testing::RunCommand({ASV_ASVRUN, "export", "--model", "zoo_model", "--out", "exported"}, dir.path());
  ASSERT_EQ(exported.status, 0) << exported.err;
  EXPECT_EQ(testing::Slurp(dir / "exported/avg_model.pt").size(),
            testing::Slurp(dir / "zoo_model/avg_model.pt").size());
  const std::string audio = wav.at(stage8.ids[0]);
  const auto zoo =
      testing::RunCommand({ASV_ASVRUN, "embed", "--model", "exported", "--out", "zoo_emb", audio}, dir.path());
  ASSERT_EQ(zoo.status, 0) << zoo.err;
  const auto zoo_embeddings = backend::ReadEmbeddings(dir / "zoo_emb/embeddings");
  EXPECT_EQ(zoo_embeddings.ids, std::vector<std::string>{fs::path(audio).stem().string()});
  EXPECT_EQ(zoo_embeddings.vectors.cols(), 192);

  // recipe.pretrained_model with start_stage 8: no training, stage 8 extracts with the WeSpeaker
  // model and stage 9 scores it; asvrun embed with the same directory gives the same embeddings
  // (stage 8 told not to cut utterances to batch them, as embed does not for a WeSpeaker model).
  const std::vector<std::string> pretrained = {ASV_ASVRUN,
                                               "voxceleb/margin",
                                               "tiny",
                                               "--run-configs",
                                               "configs/run_configs",
                                               "--set",
                                               "recipe.pretrained_model=zoo_model",
                                               "--set",
                                               "recipe.channels=None",
                                               "--set",
                                               "recipe.model='ECAPA_TDNN_c512'",
                                               "--set",
                                               "recipe.embedding_size=192",
                                               "--set",
                                               "recipe.num_mel_bins=80",
                                               "--set",
                                               "recipe.frame_length=25",
                                               "--set",
                                               "paths.system_folder=zoo_system",
                                               "--set",
                                               "recipe.lm_epochs=0",
                                               "--set",
                                               "recipe.lm_warm_up_epochs=0",
                                               // whole utterances, as asvrun embed of a WeSpeaker model
                                               "--set",
                                               "network.max_test_cut_portion=0"};
  auto scored = pretrained;
  scored.insert(scored.end(), {"--set", "recipe.start_stage=8"});
  const auto stage8_zoo = testing::RunCommand(scored, dir.path());
  ASSERT_EQ(stage8_zoo.status, 0) << stage8_zoo.err;
  EXPECT_TRUE(fs::exists(dir / "out/zoo_system/scores/scores_veri_test.txt"));
  EXPECT_FALSE(fs::exists(dir / "out/zoo_system/networks"));
  const auto zoo_embed = testing::RunCommand(
      {ASV_ASVRUN, "embed", "--model", "zoo_model", "--wav-scp", "embed.scp", "--out", "zoo_emb2"}, dir.path());
  ASSERT_EQ(zoo_embed.status, 0) << zoo_embed.err;
  const auto zoo_stage8 = backend::ReadEmbeddings(dir / "out/zoo_system/embeddings/trial");
  const auto zoo_mine = backend::ReadEmbeddings(dir / "zoo_emb2/embeddings");
  ASSERT_EQ(zoo_mine.ids, zoo_stage8.ids);
  EXPECT_LE(MaxDiff(zoo_mine.vectors, zoo_stage8.vectors), 1e-6);

  // Training starts from it (start_stage 5), and a model that does not fit the settings is
  // refused naming the setting.
  auto trained = pretrained;
  trained.insert(trained.end(), {"--set", "recipe.start_stage=5", "--set", "recipe.end_stage=6", "--set",
                                 "network.max_epochs=1", "--set", "recipe.warm_up_epochs=0", "--set",
                                 "recipe.training_trial_lists=[]", "--set", "recipe.aug_prob=0"});
  const auto train = testing::RunCommand(trained, dir.path());
  ASSERT_EQ(train.status, 0) << train.err;
  EXPECT_NE(train.err.find("training starts from the WeSpeaker model zoo_model"), std::string::npos) << train.err;
  // Large-margin fine-tuning starts from it when the run starts at stage 7; a dry run names a
  // missing model directory as a missing input.
  auto fine_tuned = pretrained;
  fine_tuned.insert(fine_tuned.end(),
                    {"--set", "recipe.start_stage=7", "--set", "recipe.end_stage=7", "--set", "recipe.lm_epochs=1",
                     "--set", "recipe.lm_num_frames=50", "--set", "recipe.training_trial_lists=[]", "--set",
                     "recipe.aug_prob=0", "--set", "paths.system_folder=zoo_lm"});
  const auto lm = testing::RunCommand(fine_tuned, dir.path());
  ASSERT_EQ(lm.status, 0) << lm.err;
  EXPECT_NE(lm.err.find("large-margin fine-tuning starts from the WeSpeaker model zoo_model"), std::string::npos)
      << lm.err;
  EXPECT_TRUE(fs::exists(dir / "out/zoo_lm/large_margin/avg_model.pt"));
  auto dry = scored;
  dry.insert(dry.end(), {"--set", "recipe.pretrained_model=no_such_model", "--dry-run"});
  const auto dry_run = testing::RunCommand(dry, dir.path());
  EXPECT_EQ(dry_run.status, 3) << dry_run.out << dry_run.err;
  EXPECT_NE(dry_run.out.find("no_such_model (recipe.pretrained_model)"), std::string::npos) << dry_run.out;

  // That run's averaged model, exported by its system folder, embeds as the run does, and Python's
  // torch.load and yaml read it with WeSpeaker's keys, shapes, dtypes and fields.
  const auto run_export = testing::RunCommand(
      {ASV_ASVRUN, "export", "--model", "out/zoo_system", "--format", "wespeaker", "--out", "run_export"}, dir.path());
  ASSERT_EQ(run_export.status, 0) << run_export.err;
  EXPECT_NE(run_export.out.find("networks/avg_model.pt"), std::string::npos) << run_export.out;
  for (const auto& [model, out] : {std::pair{"out/zoo_system", "emb_of_run"}, {"run_export", "emb_of_export"}}) {
    const auto r = testing::RunCommand({ASV_ASVRUN, "embed", "--model", model, "--wav-scp", "embed.scp", "--out", out},
                                       dir.path());
    ASSERT_EQ(r.status, 0) << r.err;
  }
  EXPECT_LE(MaxDiff(backend::ReadEmbeddings(dir / "emb_of_run/embeddings").vectors,
                    backend::ReadEmbeddings(dir / "emb_of_export/embeddings").vectors),
            1e-6);
  EXPECT_EQ(models::ReadWespeakerConfig(dir / "run_export/config.yaml").num_mel_bins, 80);
  const auto python = RunPython({std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/models/check_wespeaker_export.py", "0",
                                 (dir / "run_export").string() + ":ECAPA_TDNN_c512:trained"},
                                dir.path());
  if (python) {
    EXPECT_EQ(python->status, 0) << python->out << python->err;
  }

  scored.insert(scored.end(), {"--set", "recipe.embedding_size=16"});
  const auto misfit = testing::RunCommand(scored, dir.path());
  EXPECT_NE(misfit.status, 0);
  EXPECT_NE(misfit.err.find("recipe.embedding_size is 16 but the model's model_args.embed_dim is 192"),
            std::string::npos)
      << misfit.err;
}

}  // namespace
}  // namespace asv
