// ONNX export (asvcpp/deploy/onnx_export.h): every network kind is exported, run in ONNX Runtime
// (tests/asvcpp/deploy/run_onnx.py, with the onnxruntime that tools/setup.sh installs) on inputs
// of two lengths in one session, and compared with the network's own Embed() in eval mode:
// cosine >= 0.9999 and max |difference| <= 1e-4 x the embedding's norm. Batch norms get random
// running statistics so that inference normalisation is exercised. Settings the graph cannot
// express are errors naming them.
#include "asvcpp/deploy/onnx_export.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/features/cmn.h"
#include "asvcpp/features/fbank.h"
#include "asvcpp/features/kaldi_options.h"
#include "asvcpp/features/mfcc.h"
#include "asvcpp/features/vad.h"
#include "asvcpp/nnet/margin_heads.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"
#include "tests/build_paths.h"
#include "tests/tools/test_util.h"

namespace asv::deploy {
namespace {

namespace fs = std::filesystem;

// Gives every batch norm of `net` random running statistics (and keeps the weights).
void RandomiseBatchNorms(torch::nn::Module& net) {
  torch::NoGradGuard no_grad;
  for (auto& item : net.named_buffers()) {
    torch::Tensor& buffer = item.value();
    if (item.key().find("running_mean") != std::string::npos) buffer.copy_(0.2 * torch::randn_like(buffer));
    if (item.key().find("running_var") != std::string::npos) buffer.copy_(0.5 + torch::rand_like(buffer));
  }
}

void WriteFloats(const fs::path& file, const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  std::ofstream out(file, std::ios::binary);
  out.write(static_cast<const char*>(c.data_ptr()), static_cast<std::streamsize>(c.numel() * sizeof(float)));
}

torch::Tensor ReadFloats(const fs::path& file, std::vector<std::int64_t> shape) {
  const std::string bytes = testing::Slurp(file);
  torch::Tensor t = torch::empty(shape);
  EXPECT_EQ(bytes.size(), static_cast<std::size_t>(t.numel()) * sizeof(float)) << file;
  if (bytes.size() == static_cast<std::size_t>(t.numel()) * sizeof(float)) {
    std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  }
  return t;
}

class OnnxExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OnnxExportAvailable()) GTEST_SKIP() << "built without libonnx-dev (tools/setup.sh installs it)";
    python_ = testing::OnnxRuntimePython();
    if (python_.empty()) GTEST_SKIP() << "no ONNX Runtime: run tools/setup.sh";
    torch::manual_seed(3);
  }

  // Exports `net` and checks ONNX Runtime's embeddings of random [batch, frames, feat_dim] inputs
  // of each length in `frames` against net.Embed.
  void ExpectOnnxMatches(nnet::SpeakerNet& net, const std::vector<std::int64_t>& frames) {
    RandomiseBatchNorms(net);
    net.eval();
    const auto info = net.info();
    const fs::path model = scratch_ / "model.onnx";
    const auto summary = ExportOnnx(net, model);
    EXPECT_EQ(summary.architecture, info.architecture);
    EXPECT_EQ(summary.feat_dim, info.feat_dim);
    EXPECT_EQ(summary.embedding_size, info.embedding_size);
    EXPECT_EQ(summary.bytes, static_cast<std::int64_t>(fs::file_size(model)));
    EXPECT_FALSE(fs::exists(model.string() + ".tmp"));

    std::string runs;
    std::vector<torch::Tensor> expected;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      const torch::Tensor x = torch::randn({2, frames[i], info.feat_dim});
      {
        torch::NoGradGuard no_grad;
        expected.push_back(net.Embed(nnet::ToLayout(x.transpose(1, 2), info.layout)).contiguous());
      }
      const auto in = scratch_ / ("x" + std::to_string(i) + ".f32");
      WriteFloats(in, x);
      runs += fmt::format("{}{{\"input\": \"{}\", \"shape\": [2, {}, {}], \"output\": \"{}\"}}", i ? ", " : "",
                          in.string(), frames[i], info.feat_dim, (scratch_ / ("y" + std::to_string(i) + ".f32")).string());
    }
    const auto spec = scratch_.Write("spec.json", "{\"runs\": [" + runs + "]}");
    const auto r = testing::RunCommand(
        {python_, std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/deploy/run_onnx.py", model.string(), spec.string()},
        scratch_.path());
    ASSERT_EQ(r.status, 0) << r.err;
    for (std::size_t i = 0; i < frames.size(); ++i) {
      SCOPED_TRACE(fmt::format("{} frames", frames[i]));
      const torch::Tensor got = ReadFloats(scratch_ / ("y" + std::to_string(i) + ".f32"), {2, info.embedding_size});
      for (std::int64_t b = 0; b < 2; ++b) {
        const torch::Tensor e = expected[i][b];
        const double cosine = torch::cosine_similarity(got[b], e, 0).item<double>();
        const double largest = (got[b] - e).abs().max().item<double>();
        std::cout << fmt::format("{}, {} frames: cosine {:.9f}, max |difference| / norm {:.2e}\n", info.architecture,
                                 frames[i], cosine, largest / e.norm().item<double>());
        EXPECT_GE(cosine, 0.9999);
        EXPECT_LE(largest, 1e-4 * e.norm().item<double>()) << "max |difference| " << largest;
      }
    }
  }

  testing::ScratchDir scratch_{"onnx_export"};
  std::string python_;
};

nnet::MarginHeadOptions Head() {
  nnet::MarginHeadOptions o;
  o.type = nnet::HeadType::kArcMargin;
  return o;
}

TEST_F(OnnxExportTest, ResNet34MatchesItsEmbeddings) {
  auto net = nnet::MakeMarginNet("ResNet34", 40, 32, 5, Head(), /*channels=*/8);
  ExpectOnnxMatches(*net, {64, 37});
}

TEST_F(OnnxExportTest, EcapaTdnnWithAndWithoutGlobalContextMatchesItsEmbeddings) {
  auto glob = nnet::MakeMarginNet("ECAPA_TDNN_GLOB_c512", 40, 24, 5, Head(), /*channels=*/64);
  ExpectOnnxMatches(*glob, {50, 23});
  auto plain = nnet::MakeMarginNet("ECAPA_TDNN_c1024", 24, 16, 5, Head(), /*channels=*/32);
  ExpectOnnxMatches(*plain, {41});
}

TEST_F(OnnxExportTest, XvectorNetworksMatchTheirEmbeddings) {
  settings::NetworkSettings standard;
  standard.frame_layer_size = 48;
  standard.stat_size = 96;
  standard.embedding_size = 32;
  auto net = nnet::MakeXvectorNet(standard, 30, 7);
  ExpectOnnxMatches(*net, {120, 31});

  settings::NetworkSettings res_se = standard;
  res_se.network_class = "StandardResSeNet";
  res_se.ser = 4;
  res_se.activation = nnet::Activation::kRelu;
  auto res = nnet::MakeXvectorNet(res_se, 30, 7);
  ExpectOnnxMatches(*res, {90});

  settings::NetworkSettings selu = standard;
  selu.network_class = "StandardSeNet";
  selu.ser = 8;
  selu.activation = nnet::Activation::kSelu;
  selu.bn_affine = false;
  auto se = nnet::MakeXvectorNet(selu, 30, 7);
  ExpectOnnxMatches(*se, {60});
}

TEST_F(OnnxExportTest, XvectorNetworksWithClusteringPoolingMatchTheirEmbeddings) {
  settings::NetworkSettings ghost_vlad;
  ghost_vlad.frame_layer_size = 48;
  ghost_vlad.stat_size = 64;
  ghost_vlad.embedding_size = 32;
  ghost_vlad.pooling_layer_type = nnet::PoolingType::kClustering;
  ghost_vlad.cluster_assignment_mode = nnet::ClusterAssignment::kNetVlad;
  ghost_vlad.supervector_mode = nnet::SupervectorMode::kNetVlad;
  ghost_vlad.n_clusters = 8;
  ghost_vlad.n_ghost_clusters = 2;
  ghost_vlad.normalize_supervector = true;
  auto vlad = nnet::MakeXvectorNet(ghost_vlad, 30, 7);
  ExpectOnnxMatches(*vlad, {80, 33});

  for (const auto covariance : {nnet::LdeCovariance::kSpherical, nnet::LdeCovariance::kSharedSpherical,
                                nnet::LdeCovariance::kDiagonal, nnet::LdeCovariance::kSharedDiagonal}) {
    settings::NetworkSettings lde = ghost_vlad;
    lde.cluster_assignment_mode = nnet::ClusterAssignment::kLde;
    lde.supervector_mode = nnet::SupervectorMode::kLde;
    lde.lde_covariance_type = covariance;
    lde.n_ghost_clusters = 0;
    lde.normalize_supervector = false;
    auto net = nnet::MakeXvectorNet(lde, 30, 7);
    {
      // Precisions away from 1, so that a wrong broadcast of λ changes the assignments.
      torch::NoGradGuard no_grad;
      auto& precision = net->clustering_pooling->precision;
      precision.copy_(torch::rand_like(precision) + 0.5);
    }
    ExpectOnnxMatches(*net, {70});
  }
}

// A speech-like test signal: a few harmonics of a gliding pitch with noise, quantised to 16 bits
// (as audio decoded from a file is), [samples] in [-1, 1).
torch::Tensor TestWaveform(std::int64_t samples, double f0) {
  const torch::Tensor t = torch::arange(samples, torch::kFloat64) / 16000.0;
  const torch::Tensor pitch = f0 * (1.0 + 0.1 * torch::sin(2 * M_PI * 3.0 * t));
  const torch::Tensor phase = 2 * M_PI * torch::cumsum(pitch, 0) / 16000.0;
  torch::Tensor x = 0.02 * torch::randn({samples}, torch::kFloat64);
  for (int h = 1; h <= 5; ++h) x = x + (0.2 / h) * torch::sin(h * phase);
  return (torch::round(x.clamp(-1.0, 0.999) * 32768.0) / 32768.0).to(torch::kFloat32);
}

// With the front end inside, the graph takes audio: its embeddings of two waveforms equal those
// of features::Fbank (WeSpeaker's options) with per-utterance mean subtraction, then Embed().
TEST_F(OnnxExportTest, FbankFrontEndInsideTheGraphMatchesTheRecipesFeatures) {
  for (const char* model : {"ECAPA_TDNN_GLOB_c512", "ResNet34"}) {
    SCOPED_TRACE(model);
    auto net = nnet::MakeMarginNet(model, 40, 24, 5, Head(), /*channels=*/std::string(model) == "ResNet34" ? 8 : 64);
    RandomiseBatchNorms(*net);
    net->eval();
    OnnxFrontEnd front_end;
    front_end.fbank = features::WespeakerFbankOptions();
    front_end.fbank.mel_opts.num_bins = 40;
    const fs::path model_file = scratch_ / "with_frontend.onnx";
    ExportOnnx(*net, model_file, front_end);

    const features::Fbank fbank(front_end.fbank);
    std::string runs;
    std::vector<torch::Tensor> expected;
    const std::vector<std::int64_t> lengths{16000, 9120};
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      const torch::Tensor batch = torch::stack({TestWaveform(lengths[i], 120.0), TestWaveform(lengths[i], 210.0)});
      std::vector<torch::Tensor> feats;
      for (std::int64_t b = 0; b < 2; ++b) {
        const torch::Tensor int16_range = (batch[b] * 32768.0f).contiguous();
        const auto m = fbank.Compute(int16_range.data_ptr<float>(), int16_range.numel());
        torch::Tensor f = torch::from_blob(const_cast<float*>(m.data()), {m.rows(), m.cols()}, torch::kFloat32).clone();
        feats.push_back(f - f.mean(0, /*keepdim=*/true));
      }
      {
        torch::NoGradGuard no_grad;
        expected.push_back(net->Embed(torch::stack(feats)).contiguous());
      }
      const auto in = scratch_ / ("w" + std::to_string(i) + ".f32");
      WriteFloats(in, batch);
      runs += fmt::format("{}{{\"input\": \"{}\", \"shape\": [2, {}], \"output\": \"{}\"}}", i ? ", " : "",
                          in.string(), lengths[i], (scratch_ / ("v" + std::to_string(i) + ".f32")).string());
    }
    const auto spec = scratch_.Write("spec_frontend.json", "{\"input\": \"waveform\", \"runs\": [" + runs + "]}");
    const auto r = testing::RunCommand({python_, std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/deploy/run_onnx.py",
                                        model_file.string(), spec.string()},
                                       scratch_.path());
    ASSERT_EQ(r.status, 0) << r.err;
    for (std::size_t i = 0; i < lengths.size(); ++i) {
      const torch::Tensor got = ReadFloats(scratch_ / ("v" + std::to_string(i) + ".f32"), {2, 24});
      for (std::int64_t b = 0; b < 2; ++b) {
        const torch::Tensor e = expected[i][b];
        const double cosine = torch::cosine_similarity(got[b], e, 0).item<double>();
        const double largest = (got[b] - e).abs().max().item<double>();
        std::cout << fmt::format("{} with its front end, {} samples: cosine {:.9f}, max |difference| / norm {:.2e}\n",
                                 model, lengths[i], cosine, largest / e.norm().item<double>());
        EXPECT_GE(cosine, 0.9999);
        EXPECT_LE(largest, 1e-4 * e.norm().item<double>());
      }
    }
  }
}

// The x-vector front end: the recipe's MFCCs (run_configs/voxceleb/xvector/mfcc.conf: 30 cepstra,
// snip_edges false, C0 the log energy), Kaldi's energy VAD with voxceleb/v2's options and ASVtorch's
// centred sliding CMN of 300 frames, against features::Mfcc, ComputeVadEnergy and ApplySlidingCmn
// (without dither), on a waveform with a pause (the VAD drops frames) longer and shorter than the
// CMN window.
TEST_F(OnnxExportTest, MfccVadAndSlidingCmnInsideTheGraphMatchTheRecipesFeatures) {
  settings::NetworkSettings standard;
  standard.frame_layer_size = 48;
  standard.stat_size = 96;
  standard.embedding_size = 32;
  auto net = nnet::MakeXvectorNet(standard, 30, 7);
  RandomiseBatchNorms(*net);
  net->eval();
  OnnxFrontEnd front_end;
  front_end.kind = OnnxFrontEnd::Kind::kMfcc;
  front_end.mfcc = features::ReadKaldiConfig<features::MfccOptions>(std::string(ASV_SOURCE_DIR) +
                                                                      "/run_configs/voxceleb/xvector/mfcc.conf");
  front_end.mfcc.frame_opts.dither = 0.0f;
  front_end.vad = features::VadOptions::VoxcelebV2();
  front_end.cmn_window = 300;
  const fs::path model_file = scratch_ / "xvector_frontend.onnx";
  ExportOnnx(*net, model_file, front_end);

  const features::Mfcc mfcc(front_end.mfcc);
  std::string runs;
  std::vector<torch::Tensor> expected;
  std::vector<std::int64_t> voiced_counts;
  const std::vector<std::int64_t> lengths{56000, 20800};
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    torch::Tensor wave = TestWaveform(lengths[i], 140.0);
    wave.narrow(0, lengths[i] / 3, 8000).mul_(0.0005f);  // half a second of near silence
    wave = torch::round(wave * 32768.0f) / 32768.0f;
    const torch::Tensor int16_range = (wave * 32768.0f).contiguous();
    const Matrix raw = mfcc.Compute(int16_range.data_ptr<float>(), int16_range.numel());
    const std::vector<float> vad = features::ComputeVadEnergy(*front_end.vad, raw);
    const Matrix cmn = features::ApplySlidingCmn(features::SlidingCmnOptions::AsvTorch(300), raw);
    std::vector<torch::Tensor> voiced;
    for (std::int64_t t = 0; t < cmn.rows(); ++t) {
      if (vad[static_cast<std::size_t>(t)] > 0.5f) {
        voiced.push_back(torch::from_blob(const_cast<float*>(cmn.data()) + t * cmn.cols(), {cmn.cols()}).clone());
      }
    }
    voiced_counts.push_back(static_cast<std::int64_t>(voiced.size()));
    ASSERT_GT(voiced.size(), 20u);
    ASSERT_LT(static_cast<std::int64_t>(voiced.size()), cmn.rows() - 20);  // the pause was dropped
    {
      torch::NoGradGuard no_grad;
      expected.push_back(net->Embed(torch::stack(voiced).transpose(0, 1).unsqueeze(0)).contiguous());
    }
    const auto in = scratch_ / ("m" + std::to_string(i) + ".f32");
    WriteFloats(in, wave);
    runs += fmt::format("{}{{\"input\": \"{}\", \"shape\": [1, {}], \"output\": \"{}\"}}", i ? ", " : "",
                        in.string(), lengths[i], (scratch_ / ("n" + std::to_string(i) + ".f32")).string());
  }
  const auto spec = scratch_.Write("spec_mfcc.json", "{\"input\": \"waveform\", \"runs\": [" + runs + "]}");
  const auto r = testing::RunCommand({python_, std::string(ASV_SOURCE_DIR) + "/tests/asvcpp/deploy/run_onnx.py",
                                      model_file.string(), spec.string()},
                                     scratch_.path());
  ASSERT_EQ(r.status, 0) << r.err;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    const torch::Tensor got = ReadFloats(scratch_ / ("n" + std::to_string(i) + ".f32"), {1, 32});
    const torch::Tensor e = expected[i][0];
    const double cosine = torch::cosine_similarity(got[0], e, 0).item<double>();
    const double largest = (got[0] - e).abs().max().item<double>();
    std::cout << fmt::format("StandardNet with the MFCC front end, {} samples ({} voiced frames): cosine {:.9f}, "
                             "max |difference| / norm {:.2e}\n",
                             lengths[i], voiced_counts[i], cosine, largest / e.norm().item<double>());
    EXPECT_GE(cosine, 0.9999);
    EXPECT_LE(largest, 1e-4 * e.norm().item<double>());
  }
}

TEST(OnnxExportErrorsTest, SettingsTheGraphCannotExpressAreNamed) {
  if (!OnnxExportAvailable()) GTEST_SKIP() << "built without libonnx-dev (tools/setup.sh installs it)";
  testing::ScratchDir scratch("onnx_export_errors");
  settings::NetworkSettings circular;
  circular.cnn_padding_mode = nnet::PaddingMode::kCircular;
  auto b = nnet::MakeXvectorNet(circular, 30, 7);
  try {
    ExportOnnx(*b, scratch / "b.onnx");
    FAIL() << "circular padding was exported";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("network.cnn_padding_mode = 'circular'"), std::string::npos) << e.what();
  }
  OnnxFrontEnd mfcc;
  mfcc.kind = OnnxFrontEnd::Kind::kMfcc;  // Kaldi's default 13 cepstra for a 30-dim network
  try {
    ExportOnnx(*b, scratch / "c.onnx", mfcc);
    FAIL() << "13 cepstra were exported for a network of 30 features";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("num_ceps = 13 but the network takes 30 features"), std::string::npos)
        << e.what();
  }
  OnnxFrontEnd front_end;
  front_end.fbank = features::WespeakerFbankOptions();
  auto ecapa = nnet::MakeMarginNet("ECAPA_TDNN_c512", 40, 16, 5, Head(), 16);
  try {
    ExportOnnx(*ecapa, scratch / "d.onnx", front_end);  // 80 mel bins for a 40-dim network
    FAIL() << "a front end of 80 bins was exported for a network of 40 features";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("num_mel_bins = 80 but the network takes 40 features"), std::string::npos)
        << e.what();
  }
  front_end.fbank.mel_opts.num_bins = 40;
  front_end.fbank.use_energy = true;
  try {
    ExportOnnx(*ecapa, scratch / "d.onnx", front_end);
    FAIL() << "a log-energy column was exported";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("use_energy = true"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(scratch / "c.onnx"));
  EXPECT_FALSE(fs::exists(scratch / "d.onnx"));
  EXPECT_FALSE(fs::exists(scratch / "a.onnx"));
  EXPECT_FALSE(fs::exists(scratch / "b.onnx"));
}

}  // namespace
}  // namespace asv::deploy
