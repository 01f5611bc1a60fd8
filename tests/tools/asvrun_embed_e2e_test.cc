// `asvrun embed`, `asvrun export` and `asvrun verify` end to end: a tiny voxceleb/margin run (one
// epoch of the tiny ECAPA-TDNN of margin_tiny_configs.h on the tiny demo corpus, no fine-tuning),
// then the embeddings of `asvrun embed` with the run's model (by run id) of the trial utterances
// equal those its stage 8 wrote; the Kaldi ark/scp are read with asvcpp's Kaldi reader, the .npy
// header and rows are checked, bad audio is skipped and listed, and errors exit by kind.
// `asvrun verify` on trials of the run's own list gives stage 9's scores bit for bit, with the
// decisions at its stored thresholds. Also the WeSpeaker path: a model directory exported by the
// library goes through `asvrun export`, `asvrun embed` and `asvrun verify` (cosine, no decision).
// Skipped when espeak-ng or ffmpeg is missing.
#include <cmath>
#include <cstring>
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/eval/score_file.h"
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
  {
    const std::vector<float> got =
        testing::RunAudioOnnxGraph(dir.path(), "audio_in.onnx", wav.at(stage8.ids[0]), mine.vectors.cols());
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
  const auto no_asvtorch = testing::RunCommand(
      {ASV_ASVRUN, "export", "--model", "out/tiny_system", "--format", "asvtorch", "--out", "asvtorch.pt"}, dir.path());
  EXPECT_EQ(no_asvtorch.status, 2) << no_asvtorch.err;
  EXPECT_NE(no_asvtorch.err.find("--format asvtorch takes the networks of x-vector runs"), std::string::npos)
      << no_asvtorch.err;

  // asvrun verify: trials of the run's own list (utterance ids of its stored embeddings) score as
  // stage 9 scored them, bit for bit, with the decision at the stored EER threshold (the run's
  // cosine scores are not calibrated).
  const auto list = eval::ReadTrialList(dir / "out/datasets/voxceleb1/lists/veri_test.txt");
  const auto stage9 = eval::ReadScoreFile(dir / "out/tiny_system/scores/scores_veri_test.txt", &list);
  ASSERT_GE(list.size(), 3u);
  const std::vector<std::size_t> picked{0, 1, list.size() - 1};
  std::string trials_text = "# enrollment test\n";
  for (const std::size_t k : picked) trials_text += list.left[k] + " " + list.right[k] + " " + list.label[k] + "\n";
  dir.Write("verify_trials.txt", trials_text);
  const auto verify = testing::RunCommand({ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db",
                                           "--trials", "verify_trials.txt", "--json"},
                                          dir.path());
  ASSERT_EQ(verify.status, 0) << verify.err;
  const auto thresholds = nlohmann::json::parse(testing::Slurp(dir / "out/tiny_system/backend/thresholds.json"));
  const double eer_threshold = thresholds["lists"]["tiny_trials"]["eer_threshold"].get<double>();
  const auto verified = nlohmann::json::parse(verify.out);
  EXPECT_EQ(verified["run"], 1);
  EXPECT_EQ(verified["calibrated"], false);
  EXPECT_EQ(verified["back_end"]["scoring"], "cosine");
  ASSERT_EQ(verified["thresholds"].size(), 1u);
  EXPECT_EQ(verified["thresholds"][0]["list"], "tiny_trials");
  ASSERT_EQ(verified["trials"].size(), picked.size());
  for (std::size_t i = 0; i < picked.size(); ++i) {
    const auto& t = verified["trials"][i];
    const std::size_t k = picked[i];
    EXPECT_EQ(t["enrollment"].get<std::vector<std::string>>(), std::vector<std::string>{list.left[k]});
    EXPECT_EQ(t["test"].get<std::string>(), list.right[k]);
    EXPECT_EQ(t["score"].get<double>(), stage9[k]) << "trial " << k << ": " << list.left[k] << " " << list.right[k];
    ASSERT_EQ(t["decisions"].size(), 1u);
    EXPECT_EQ(t["decisions"][0]["kind"], "eer");
    EXPECT_EQ(t["decisions"][0]["threshold"].get<double>(), eer_threshold);
    EXPECT_EQ(t["decisions"][0]["accept"].get<bool>(), stage9[k] >= eer_threshold);
  }
  for (const auto& input : verified["inputs"]) EXPECT_EQ(input["from"], "stored embedding");

  // Two enrollment utterances are averaged before the back end: 'c' processing (the mean of the
  // back-end embeddings subtracted) and cosine scoring, computed here in double precision.
  const auto plda = backend::ReadEmbeddings(dir / "out/tiny_system/embeddings/plda");
  const auto row_of = [&](const std::string& id) {
    const auto it = std::find(stage8.ids.begin(), stage8.ids.end(), id);
    EXPECT_NE(it, stage8.ids.end()) << id;
    return it - stage8.ids.begin();
  };
  const std::string enroll_a = list.left[0], enroll_b = list.left[1], test = list.right[picked.back()];
  std::vector<double> center(static_cast<std::size_t>(plda.vectors.cols())), e(center.size()), t(center.size());
  for (std::int64_t c = 0; c < plda.vectors.cols(); ++c) {
    for (std::int64_t r = 0; r < plda.vectors.rows(); ++r) center[c] += plda.vectors(r, c);
    center[c] /= static_cast<double>(plda.vectors.rows());
    e[c] = (static_cast<double>(stage8.vectors(row_of(enroll_a), c)) + stage8.vectors(row_of(enroll_b), c)) / 2 -
           center[c];
    t[c] = stage8.vectors(row_of(test), c) - center[c];
  }
  double dot = 0, ee = 0, tt = 0;
  for (std::size_t c = 0; c < e.size(); ++c) {
    dot += e[c] * t[c];
    ee += e[c] * e[c];
    tt += t[c] * t[c];
  }
  const auto averaged = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "out/tiny_system", enroll_a, enroll_b, "--test", test, "--json"}, dir.path());
  ASSERT_EQ(averaged.status, 0) << averaged.err;
  const auto averaged_json = nlohmann::json::parse(averaged.out);
  ASSERT_EQ(averaged_json["trials"].size(), 1u);
  EXPECT_NEAR(averaged_json["trials"][0]["score"].get<double>(), dot / std::sqrt(ee * tt), 1e-5);

  // Audio files: embedded with the run's front end as asvrun embed does; the text table shows the
  // decision. Stage 8 batched them with other utterances, so the score is close, not equal.
  const auto audio = testing::RunCommand({ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db",
                                          wav.at(list.left[0]), "--test", wav.at(list.right[0]), "--test",
                                          list.right[1]},
                                         dir.path());
  ASSERT_EQ(audio.status, 0) << audio.err;
  EXPECT_NE(audio.out.find("# threshold eer(tiny_trials): "), std::string::npos) << audio.out;
  std::istringstream table(audio.out);
  std::vector<std::vector<std::string>> cells;
  for (std::string line; std::getline(table, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    cells.emplace_back();
    for (std::string w; words >> w;) cells.back().push_back(w);
  }
  ASSERT_EQ(cells.size(), 3u) << audio.out;
  EXPECT_EQ(cells[0], (std::vector<std::string>{"enrollment", "test", "score", "eer(tiny_trials)"}));
  ASSERT_EQ(cells[1].size(), 4u);
  const double audio_score = std::stod(cells[1][2]);
  EXPECT_NEAR(audio_score, stage9[0], 0.05) << audio.out;
  EXPECT_EQ(cells[1][3], audio_score >= eer_threshold ? "accept" : "reject");
  EXPECT_EQ(cells[2][1], list.right[1]);

  // Bad input: an unknown id and a missing file (3, naming them), a file that is not audio (3),
  // a bad command line (2).
  const auto unknown = testing::RunCommand({ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db",
                                            "no-such-utterance", "--test", "missing.wav"},
                                           dir.path());
  EXPECT_EQ(unknown.status, 3) << unknown.err;
  EXPECT_NE(unknown.err.find("no-such-utterance, missing.wav: neither an audio file nor an utterance id of the "
                             "system's stored embeddings"),
            std::string::npos)
      << unknown.err;
  const auto not_audio = testing::RunCommand({ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db",
                                              wav.at(list.left[0]), "--test", "not_audio.wav"},
                                             dir.path());
  EXPECT_EQ(not_audio.status, 3) << not_audio.err;
  EXPECT_NE(not_audio.err.find("1 audio file gave no embedding"), std::string::npos) << not_audio.err;
  EXPECT_NE(not_audio.err.find("not_audio.wav: unreadable audio file"), std::string::npos) << not_audio.err;
  const auto only_not_audio = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db", list.left[0], "--test", "not_audio.wav"},
      dir.path());
  EXPECT_EQ(only_not_audio.status, 3) << only_not_audio.err;
  EXPECT_NE(only_not_audio.err.find("not_audio.wav: unreadable audio file"), std::string::npos)
      << only_not_audio.err;
  EXPECT_EQ(testing::RunCommand({ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db", list.left[0]},
                                dir.path())
                .status,
            2);
  EXPECT_EQ(testing::RunCommand({ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db", "--trials",
                                 "verify_trials.txt", "--test", list.right[0]},
                                dir.path())
                .status,
            2);
  dir.Write("bad_trials.txt", list.left[0] + "\n");
  const auto bad_trials = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "1", "--db", "out/experiments.db", "--trials", "bad_trials.txt"}, dir.path());
  EXPECT_EQ(bad_trials.status, 3);
  EXPECT_NE(bad_trials.err.find("bad_trials.txt:1: expected 'enrollment test'"), std::string::npos) << bad_trials.err;

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
  const std::string audio_file = wav.at(stage8.ids[0]);
  const auto zoo =
      testing::RunCommand({ASV_ASVRUN, "embed", "--model", "exported", "--out", "zoo_emb", audio_file}, dir.path());
  ASSERT_EQ(zoo.status, 0) << zoo.err;
  const auto zoo_embeddings = backend::ReadEmbeddings(dir / "zoo_emb/embeddings");
  EXPECT_EQ(zoo_embeddings.ids, std::vector<std::string>{fs::path(audio_file).stem().string()});
  EXPECT_EQ(zoo_embeddings.vectors.cols(), 192);
  // verify with it: no back end, the cosine of the raw embeddings and no decision; a file against
  // itself scores 1.
  const auto zoo_verify = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "exported", audio_file, "--test", audio_file, "--json"}, dir.path());
  ASSERT_EQ(zoo_verify.status, 0) << zoo_verify.err;
  const auto zoo_json = nlohmann::json::parse(zoo_verify.out);
  EXPECT_TRUE(zoo_json["system"].is_null());
  EXPECT_TRUE(zoo_json["thresholds"].empty());
  EXPECT_NE(zoo_json["note"].get<std::string>().find("no back end"), std::string::npos);
  ASSERT_EQ(zoo_json["trials"].size(), 1u);
  EXPECT_NEAR(zoo_json["trials"][0]["score"].get<double>(), 1.0, 1e-6);
  EXPECT_TRUE(zoo_json["trials"][0]["decisions"].empty());
  const auto zoo_unknown = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "exported", list.left[0], "--test", audio_file}, dir.path());
  EXPECT_EQ(zoo_unknown.status, 3);
  EXPECT_NE(zoo_unknown.err.find("a WeSpeaker model has no stored embeddings"), std::string::npos) << zoo_unknown.err;

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
  const auto python = testing::RunTorchPython(
      {std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/models/check_wespeaker_export.py", "0",
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
