#include "asvcpp/train/model_init.h"

#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/speaker_net.h"

namespace asv::train {
namespace {

namespace stdfs = std::filesystem;

nnet::MarginHeadOptions Arc() {
  nnet::MarginHeadOptions o;
  o.type = nnet::HeadType::kArcMargin;
  o.margin = 0.2;
  return o;
}

// A narrow ECAPA-TDNN (C = 16) on 20 bins with 8-dim embeddings and `classes` classes.
nnet::MarginNet Small(std::int64_t classes, std::int64_t channels = 16) {
  return nnet::MakeMarginNet("ECAPA_TDNN_c512", 20, 8, classes, Arc(), channels);
}

torch::Tensor Param(const torch::nn::Module& m, const std::string& name) {
  for (const auto& p : m.named_parameters()) {
    if (p.key() == name) return p.value();
  }
  for (const auto& b : m.named_buffers()) {
    if (b.key() == name) return b.value();
  }
  ADD_FAILURE() << "no tensor " << name;
  return {};
}

void RandomizeWeights(torch::nn::Module& m) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters()) p.value().copy_(torch::randn(p.value().sizes()));
  for (auto& b : m.named_buffers()) {
    if (b.value().is_floating_point()) b.value().copy_(torch::rand(b.value().sizes()) + 0.5);
  }
}

TEST(ModelInitTest, SameShapesCopyEveryTensor) {
  torch::manual_seed(3);
  auto from = Small(6);
  auto to = Small(6);
  RandomizeWeights(*from);
  CopyModelState(*from, *to, "projection.");
  std::size_t compared = 0;
  for (const auto& p : from->named_parameters()) {
    EXPECT_TRUE(torch::equal(p.value(), Param(*to, p.key()))) << p.key();
    ++compared;
  }
  for (const auto& b : from->named_buffers()) {
    EXPECT_TRUE(torch::equal(b.value(), Param(*to, b.key()))) << b.key();
    ++compared;
  }
  EXPECT_GT(compared, 20u);
}

// Speed perturbation off after training with it: 3 N classes -> N, every speaker keeps the row of
// its original-speed label; and back: N -> 3 N, each speed copy starts as its speaker.
TEST(ModelInitTest, HeadRowsFollowTheSpeakerAcrossClassCounts) {
  torch::manual_seed(4);
  auto speed = Small(6);  // 2 speakers x 3 speeds
  RandomizeWeights(*speed);
  auto plain = Small(2);
  CopyModelState(*speed, *plain, "projection.");
  const auto w6 = Param(*speed, "projection.weight");
  const auto w2 = Param(*plain, "projection.weight");
  ASSERT_EQ(w2.size(0), 2);
  EXPECT_TRUE(torch::equal(w2, w6.slice(0, 0, 2)));
  for (const auto& p : speed->named_parameters()) {
    if (p.key().rfind("projection.", 0) == 0) continue;
    EXPECT_TRUE(torch::equal(p.value(), Param(*plain, p.key()))) << p.key();
  }
  auto again = Small(6);
  CopyModelState(*plain, *again, "projection.");
  const auto w = Param(*again, "projection.weight");
  for (int c = 0; c < 6; ++c) EXPECT_TRUE(torch::equal(w[c], w2[c % 2])) << "class " << c;
}

TEST(ModelInitTest, OtherShapesOrKeysAreErrorsNamingTheTensor) {
  auto narrow = Small(4, 16);
  auto wide = Small(4, 24);
  try {
    CopyModelState(*narrow, *wide, "projection.");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("is ["), std::string::npos) << e.what();
  }
  // A class count change outside the head is not mapped: without the prefix it is an error.
  auto six = Small(6);
  EXPECT_THROW(CopyModelState(*six, *narrow, ""), DataError);
  // Another architecture: keys the network lacks.
  auto resnet = nnet::MakeMarginNet("ResNet34", 16, 8, 4, Arc(), 8);
  try {
    CopyModelState(*resnet, *narrow, "projection.");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("which the network lacks"), std::string::npos) << e.what();
  }
}

TEST(ModelInitTest, InitFromCheckpointReadsTheCheckpointsOwnNetwork) {
  torch::manual_seed(5);
  const auto folder = stdfs::temp_directory_path() / ("asv_model_init_test_" + std::to_string(::getpid()));
  stdfs::remove_all(folder);
  stdfs::create_directories(folder);
  auto trained = Small(6);
  RandomizeWeights(*trained);
  CheckpointMeta meta;
  meta.architecture = "ECAPA_TDNN_c512";
  meta.feat_dim = 20;
  meta.n_speakers = 6;
  meta.embedding_size = 8;
  meta.epoch = 7;
  WriteCheckpoint(folder / "avg_model.pt", meta, *trained, nullptr);

  auto net = Small(2);
  std::int64_t built_classes = 0;
  const auto read = InitFromCheckpoint(
      folder / "avg_model.pt", *net,
      [&](std::int64_t feat_dim, std::int64_t classes) -> std::shared_ptr<torch::nn::Module> {
        EXPECT_EQ(feat_dim, 20);
        built_classes = classes;
        return Small(classes).ptr();
      },
      "projection.");
  EXPECT_EQ(read.epoch, 7);
  EXPECT_EQ(built_classes, 6);
  EXPECT_TRUE(torch::equal(Param(*net, "projection.weight"), Param(*trained, "projection.weight").slice(0, 0, 2)));
  // The embeddings of the initialised network are the trained network's.
  trained->eval();
  net->eval();
  const auto x = torch::randn({2, 50, 20});  // [batch, frames, feat_dim]
  EXPECT_TRUE(torch::allclose(net->Embed(x), trained->Embed(x)));
  // A missing file names itself.
  try {
    InitFromCheckpoint(folder / "missing.pt", *net, [](std::int64_t, std::int64_t) { return Small(2).ptr(); },
                       "projection.");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.pt"), std::string::npos) << e.what();
  }
  stdfs::remove_all(folder);
}

}  // namespace
}  // namespace asv::train
