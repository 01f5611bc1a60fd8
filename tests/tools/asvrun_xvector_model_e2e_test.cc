// `asvrun embed`, `asvrun verify` and `asvrun export` with a voxceleb/xvector run: a tiny run
// (stages 0-1 of the tiny corpus, then two epochs of the tiny StandardNet of xvector_tiny.h,
// embeddings and cosine scoring), then
//  - `asvrun embed --model RUN` of the trial utterances, given with their ids, gives the
//    embeddings its stage 7 wrote (the run's MFCCs with dither seeded by the id, compressed, VAD,
//    sliding CMN), also from another folder (the run's relative mfcc.conf found through the run's
//    folder);
//  - `asvrun verify --trials` of trials of the run's list gives stage 9's scores bit for bit, also
//    after stage 9 scored the system again with AS-norm and a calibration (Bayes decisions);
//  - the ONNX graph with the front end gives `asvrun embed --clean-features`'s embedding of a WAV
//    file (cosine >= 0.9999, max |diff| <= 1e-4 x norm) in ONNX Runtime;
//  - `asvrun export --format asvtorch` writes ASVtorch's state dict; WeSpeaker's format is refused
//    naming the network.
// And a tiny sitw/xvector run (sitw_tiny_configs.h), its model given by system folder: verify gives
// stage 9's scores of both SITW lists (core-core, core-multi) bit for bit, and embed by id stage
// 7's embeddings.
// Skipped when espeak-ng or ffmpeg is missing.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/eval/score_file.h"
#include "asvcpp/models/torch_pickle.h"
#include "tests/build_paths.h"
#include "tests/tools/sitw_tiny_configs.h"
#include "tests/tools/test_util.h"
#include "tests/tools/xvector_tiny.h"

namespace asv {
namespace {

namespace fs = std::filesystem;

const std::string kConfigs = testing::kTinyFeaturesBlock + testing::kTinyStages5To9Block + R"(
# Stage 9 again with AS-norm against the speaker means and a linear calibration
calibrated < tiny
recipe.start_stage = 9
backend.score_norm = True
backend.calibration = 'linear'
backend.keep_degenerate_calibration = True
)";

std::map<std::string, std::string> ReadWavScp(const fs::path& path) {
  std::map<std::string, std::string> wav;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto space = line.find(' ');
    wav[line.substr(0, space)] = line.substr(space + 1);
  }
  return wav;
}

// max |a - b| over max |b| of two matrices of the same shape (infinity when the shapes differ).
double RelativeMaxDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  double diff = 0, largest = 0;
  for (std::int64_t r = 0; r < a.rows(); ++r) {
    for (std::int64_t c = 0; c < a.cols(); ++c) {
      diff = std::max(diff, static_cast<double>(std::abs(a(r, c) - b(r, c))));
      largest = std::max(largest, static_cast<double>(std::abs(b(r, c))));
    }
  }
  return diff / largest;
}

struct Similarity {
  double cosine = 0;
  double max_diff_over_norm = 0;
};
Similarity Compare(const std::vector<float>& x, const Matrix& m, std::int64_t row) {
  double dot = 0, a = 0, b = 0, largest = 0;
  for (std::int64_t c = 0; c < m.cols(); ++c) {
    const double u = x[static_cast<std::size_t>(c)], v = m(row, c);
    dot += u * v;
    a += u * u;
    b += v * v;
    largest = std::max(largest, std::abs(u - v));
  }
  return {dot / std::sqrt(a * b), largest / std::sqrt(b)};
}

TEST(AsvrunXvectorModelE2eTest, EmbedsVerifiesAndExportsAsTheRun) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("xvector_model_e2e");
  const auto corpus = testing::LinkTinyCorpus(dir.path());
  ASSERT_EQ(corpus.status, 0) << corpus.err;
  dir.Write("configs/run_configs", kConfigs);
  dir.Write("configs/init_config", testing::kTinyInitConfig);
  fs::copy_file(fs::path(ASV_SOURCE_DIR) / "run_configs/voxceleb/xvector/mfcc.conf", dir / "configs/mfcc.conf");
  const auto run = testing::RunCommand({ASV_ASVRUN, "voxceleb/xvector", "features", "tiny", "--run-configs",
                                        "configs/run_configs", "--init-config", "configs/init_config"},
                                       dir.path());
  ASSERT_EQ(run.status, 0) << run.err;

  // Run 2 (tiny): the trial utterances in stage 7's order, given with their ids.
  const auto stage7 = backend::ReadEmbeddings(dir / "out/tiny_system/embeddings/trial");
  ASSERT_GT(stage7.ids.size(), 2u);
  const auto wav = ReadWavScp(dir / "out/datasets/voxceleb1/lists/wav.scp");
  std::string scp;
  for (const auto& id : stage7.ids) scp += id + " " + wav.at(id) + "\n";
  dir.Write("embed.scp", scp);
  const auto embed = testing::RunCommand(
      {ASV_ASVRUN, "embed", "--model", "2", "--db", "out/experiments.db", "--wav-scp", "embed.scp", "--out", "emb"},
      dir.path());
  ASSERT_EQ(embed.status, 0) << embed.out << embed.err;
  const auto mine = backend::ReadEmbeddings(dir / "emb/embeddings");
  ASSERT_EQ(mine.ids, stage7.ids);
  EXPECT_EQ(mine.durations, stage7.durations);
  const double relative = RelativeMaxDiff(mine.vectors, stage7.vectors);
  EXPECT_LE(relative, 1e-5);
  std::cout << std::setprecision(10) << "asvrun embed vs stage 7: max |diff| / max |value| = " << relative << "\n";

  // From another folder, by the system folder: the run's relative mfcc.conf is found through the
  // folder the run ran in.
  fs::create_directories(dir / "elsewhere");
  const auto elsewhere = testing::RunCommand(
      {ASV_ASVRUN, "embed", "--model", "../out/tiny_system", "--wav-scp", "../embed.scp", "--out", "../emb2"},
      dir / "elsewhere");
  ASSERT_EQ(elsewhere.status, 0) << elsewhere.err;
  EXPECT_EQ(RelativeMaxDiff(backend::ReadEmbeddings(dir / "emb2/embeddings").vectors, mine.vectors), 0.0);

  // verify: trials of the run's list score as stage 9 scored them, bit for bit.
  const auto list = eval::ReadTrialList(dir / "out/datasets/voxceleb1/lists/veri_test.txt");
  const auto stage9 = eval::ReadScoreFile(dir / "out/tiny_system/scores/scores_veri_test.txt", &list);
  ASSERT_GE(list.size(), 2u);
  std::string trials;
  for (std::size_t k = 0; k < list.size(); ++k) trials += list.left[k] + " " + list.right[k] + "\n";
  dir.Write("trials.txt", trials);
  const auto verify = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "2", "--db", "out/experiments.db", "--trials", "trials.txt", "--json"},
      dir.path());
  ASSERT_EQ(verify.status, 0) << verify.err;
  const auto verified = nlohmann::json::parse(verify.out);
  ASSERT_EQ(verified["trials"].size(), list.size());
  const auto thresholds = nlohmann::json::parse(testing::Slurp(dir / "out/tiny_system/backend/thresholds.json"));
  const double eer_threshold = thresholds["lists"]["tiny_trials"]["eer_threshold"].get<double>();
  for (std::size_t k = 0; k < list.size(); ++k) {
    const auto& t = verified["trials"][k];
    EXPECT_EQ(t["score"].get<double>(), stage9[k]) << "trial " << k;
    ASSERT_EQ(t["decisions"].size(), 1u);
    EXPECT_EQ(t["decisions"][0]["accept"].get<bool>(), stage9[k] >= eer_threshold);
  }
  // The audio files of a trial: the dither is seeded by the files' names, not the utterance ids, so
  // the score is close to stage 9's, not equal.
  const auto audio = testing::RunCommand({ASV_ASVRUN, "verify", "--model", "2", "--db", "out/experiments.db",
                                          wav.at(list.left[0]), "--test", wav.at(list.right[0]), "--json"},
                                         dir.path());
  ASSERT_EQ(audio.status, 0) << audio.err;
  const double audio_score = nlohmann::json::parse(audio.out)["trials"][0]["score"].get<double>();
  EXPECT_NEAR(audio_score, stage9[0], 0.05);
  std::cout << "verify of the audio files of trial 1: " << audio_score << ", stage 9: " << stage9[0] << "\n";

  // ONNX with the front end: ONNX Runtime on a WAV file gives embed --clean-features's embedding.
  const std::string wav_file = wav.at(stage7.ids[0]);
  for (const bool with_frontend : {false, true}) {
    std::vector<std::string> args{ASV_ASVRUN, "export", "--model", "2", "--db", "out/experiments.db", "--format",
                                  "onnx",     "--out",  with_frontend ? "audio_in.onnx" : "feats_in.onnx"};
    if (with_frontend) args.push_back("--with-frontend");
    const auto onnx = testing::RunCommand(args, dir.path());
    ASSERT_EQ(onnx.status, 0) << onnx.err;
    EXPECT_NE(onnx.out.find(with_frontend ? "input waveform [1, samples]" : "input feats"), std::string::npos)
        << onnx.out;
  }
  const auto clean = testing::RunCommand({ASV_ASVRUN, "embed", "--model", "2", "--db", "out/experiments.db",
                                          "--clean-features", "--out", "clean", wav_file},
                                         dir.path());
  ASSERT_EQ(clean.status, 0) << clean.err;
  const auto clean_embedding = backend::ReadEmbeddings(dir / "clean/embeddings");
  ASSERT_EQ(clean_embedding.ids.size(), 1u);
  {
    std::vector<float> stored(static_cast<std::size_t>(stage7.vectors.cols()));
    for (std::int64_t c = 0; c < stage7.vectors.cols(); ++c) stored[static_cast<std::size_t>(c)] = stage7.vectors(0, c);
    std::cout << "clean features vs stage 7 (dither, compression): cosine "
              << Compare(stored, clean_embedding.vectors, 0).cosine << "\n";
  }
  {
    const std::vector<float> got =
        testing::RunAudioOnnxGraph(dir.path(), "audio_in.onnx", wav_file, clean_embedding.vectors.cols());
    const auto similarity = Compare(got, clean_embedding.vectors, 0);
    EXPECT_GE(similarity.cosine, 0.9999);
    EXPECT_LE(similarity.max_diff_over_norm, 1e-4);
    std::cout << "ONNX Runtime vs asvrun embed --clean-features: cosine " << similarity.cosine
              << ", max |diff| / norm " << similarity.max_diff_over_norm << "\n";
  }

  // ASVtorch's state dict: BaseNet's four values first, then every tensor of the network
  // (asvtorch_model_test checks the keys against ASVtorch's own classes).
  const auto asvtorch = testing::RunCommand({ASV_ASVRUN, "export", "--model", "2", "--db", "out/experiments.db",
                                             "--format", "asvtorch", "--out", "asvtorch_state.pt"},
                                            dir.path());
  ASSERT_EQ(asvtorch.status, 0) << asvtorch.err;
  const auto state = models::LoadStateDict(dir / "asvtorch_state.pt");
  ASSERT_GT(state.size(), 4u);
  EXPECT_EQ(state[0].first, "feat_dim_param");
  EXPECT_EQ(state[0].second.item<std::int64_t>(), 30);  // the recipe's mfcc.conf: 30 cepstra
  EXPECT_EQ(state[3].first, "consecutive_lr_updates");
  EXPECT_EQ(state[4].first, "tdnn_layers.0.batchnorm.weight");
  EXPECT_EQ(state.back().first, "utterance_layers.1.bias");
  EXPECT_EQ(state.back().second.size(0), state[1].second.item<std::int64_t>());  // n_speakers_param

  // Run 3 scores the same system again with AS-norm and a calibration: verify gives its calibrated
  // scores bit for bit, decided at the Bayes thresholds of both operating points.
  const auto calibrated = testing::RunCommand({ASV_ASVRUN, "voxceleb/xvector", "calibrated", "--run-configs",
                                               "configs/run_configs", "--init-config", "configs/init_config"},
                                              dir.path());
  ASSERT_EQ(calibrated.status, 0) << calibrated.err;
  const auto llrs = eval::ReadScoreFile(dir / "out/tiny_system/scores/scores_veri_test.txt", &list);
  const auto verify_llr = testing::RunCommand(
      {ASV_ASVRUN, "verify", "--model", "3", "--db", "out/experiments.db", "--trials", "trials.txt", "--json"},
      dir.path());
  ASSERT_EQ(verify_llr.status, 0) << verify_llr.err;
  const auto verified_llr = nlohmann::json::parse(verify_llr.out);
  EXPECT_EQ(verified_llr["calibrated"], true);
  EXPECT_EQ(verified_llr["back_end"]["score_norm"], "as-norm");
  ASSERT_EQ(verified_llr["trials"].size(), list.size());
  std::size_t differ = 0;
  for (std::size_t k = 0; k < list.size(); ++k) {
    const auto& t = verified_llr["trials"][k];
    EXPECT_EQ(t["score"].get<double>(), llrs[k]) << "trial " << k;
    differ += t["score"].get<double>() != stage9[k];
    ASSERT_EQ(t["decisions"].size(), 2u);
    for (const auto& d : t["decisions"]) {
      EXPECT_EQ(d["kind"], "bayes");
      const double p = d["p_target"].get<double>();
      EXPECT_NEAR(d["threshold"].get<double>(), std::log((1 - p) / p), 1e-12);
      EXPECT_EQ(d["accept"].get<bool>(), llrs[k] >= d["threshold"].get<double>());
    }
  }
  EXPECT_EQ(differ, list.size());  // the calibrated LLRs are not the cosine scores

  // No WeSpeaker form (2, naming the network).
  const auto wespeaker = testing::RunCommand(
      {ASV_ASVRUN, "export", "--model", "2", "--db", "out/experiments.db", "--out", "wespeaker"}, dir.path());
  EXPECT_EQ(wespeaker.status, 2);
  EXPECT_NE(wespeaker.err.find("an x-vector network (StandardNet)"), std::string::npos) << wespeaker.err;
}

TEST(AsvrunXvectorModelE2eTest, SitwRunVerifiesBothListsAsStage9) {
  if (!testing::HaveDemoCorpusTools()) {
    GTEST_SKIP() << "espeak-ng, ffmpeg or python3 missing (tools/setup.sh installs them)";
  }
  testing::ScratchDir dir("sitw_model_e2e");
  const auto setup = testing::SetUpSitwDir(dir);
  ASSERT_EQ(setup.status, 0) << setup.err;
  const auto run = testing::RunCommand(
      {ASV_ASVRUN, "sitw/xvector", "tiny", "--run-configs", "configs/run_configs", "--init-config",
       "configs/init_config"},
      dir.path());
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* name : {"core_core", "core_multi"}) {
    SCOPED_TRACE(name);
    const fs::path file = dir / "out/datasets/sitw/lists" / (std::string("sitw_trials_") + name + ".txt");
    const auto list = eval::ReadTrialList(file);
    const auto stage9 = eval::ReadScoreFile(
        dir / "out/tiny_system/scores" / (std::string("scores_sitw_trials_") + name + ".txt"), &list);
    std::string trials;
    for (std::size_t k = 0; k < list.size(); ++k) trials += list.left[k] + " " + list.right[k] + "\n";
    dir.Write("trials.txt", trials);
    const auto verify = testing::RunCommand(
        {ASV_ASVRUN, "verify", "--model", "out/tiny_system", "--trials", "trials.txt", "--json"}, dir.path());
    ASSERT_EQ(verify.status, 0) << verify.err;
    const auto verified = nlohmann::json::parse(verify.out);
    ASSERT_EQ(verified["trials"].size(), list.size());
    for (std::size_t k = 0; k < list.size(); ++k) {
      EXPECT_EQ(verified["trials"][k]["score"].get<double>(), stage9[k]) << "trial " << k;
    }
  }

  // embed by id of the trial utterances gives stage 7's embeddings (multi-session sides, '&'-joined
  // ids, are not single audio files and are left out).
  const auto stage7 = backend::ReadEmbeddings(dir / "out/tiny_system/embeddings/trial");
  const auto wav = ReadWavScp(dir / "out/datasets/sitw/lists/wav.scp");
  std::string scp;
  std::vector<std::string> ids;
  for (const auto& id : stage7.ids) {
    if (id.find('&') != std::string::npos) continue;
    scp += id + " " + wav.at(id) + "\n";
    ids.push_back(id);
  }
  dir.Write("embed.scp", scp);
  const auto embed =
      testing::RunCommand({ASV_ASVRUN, "embed", "--model", "out/tiny_system", "--wav-scp", "embed.scp", "--out", "emb"},
                          dir.path());
  ASSERT_EQ(embed.status, 0) << embed.err;
  const auto mine = backend::ReadEmbeddings(dir / "emb/embeddings");
  ASSERT_EQ(mine.ids, ids);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto row = std::find(stage7.ids.begin(), stage7.ids.end(), ids[i]) - stage7.ids.begin();
    for (std::int64_t c = 0; c < mine.vectors.cols(); ++c) {
      EXPECT_NEAR(mine.vectors(static_cast<std::int64_t>(i), c), stage7.vectors(row, c),
                  1e-5 * std::abs(stage7.vectors(row, c)) + 1e-6)
          << ids[i];
    }
  }
}

}  // namespace
}  // namespace asv
