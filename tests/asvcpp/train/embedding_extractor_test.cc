#include "asvcpp/train/embedding_extractor.h"

#include <algorithm>
#include <cmath>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/train/trainer.h"
#include "tests/asvcpp/train/synthetic_data.h"

namespace asv::train {
namespace {

settings::NetworkSettings SmallNet() {
  settings::NetworkSettings n;
  n.frame_layer_size = 32;
  n.stat_size = 32;
  n.embedding_size = 16;
  return n;
}

// A network with non-trivial batch-norm statistics.
nnet::XvectorNet TrainedLookingNet() {
  torch::manual_seed(40);
  auto net = nnet::MakeXvectorNet(SmallNet(), 30, 8);
  for (int i = 0; i < 3; ++i) net->forward(torch::randn({8, 30, 30}) * 2 + 1);
  return net;
}

torch::Tensor EmbedFirstFrames(nnet::XvectorNetImpl& net, const data::FeatureSource& source, int u, std::int64_t frames) {
  const Matrix m = source.Clip(u, 0, frames);
  auto x = torch::from_blob(const_cast<float*>(m.data()), {frames, source.FeatDim()}, torch::kFloat32)
               .t()
               .unsqueeze(0)
               .contiguous();
  net.eval();
  torch::NoGradGuard g;
  return net.Embed(x).squeeze(0);
}

torch::Tensor Row(const Matrix& m, std::int64_t r) {
  return torch::from_blob(const_cast<float*>(m.row(r)), {m.cols()}, torch::kFloat32).clone();
}

TEST(EmbeddingExtractorTest, KeepsTheCallersOrder) {
  const auto data = testing::MakeSyntheticData({});
  auto net = TrainedLookingNet();
  EmbeddingExtractor extractor(net.ptr(), "cpu");
  ExtractionOptions o;
  o.max_batch_size_in_frames = 600;
  o.max_cut_portion = 0.3;
  std::vector<int> list = {17, 3, 40, 3, 90, 0, 55, 21, 8, 64};
  auto reversed = list;
  std::reverse(reversed.begin(), reversed.end());
  const auto a = extractor.Extract(*data.source, list, o);
  const auto b = extractor.Extract(*data.source, reversed, o);
  ASSERT_EQ(a.embeddings.rows(), 10);
  ASSERT_EQ(a.embeddings.cols(), 16);
  EXPECT_GT(static_cast<std::size_t>(a.batches), 1u);
  EXPECT_LT(static_cast<std::size_t>(a.batches), list.size());  // several utterances per batch
  for (std::int64_t i = 0; i < 10; ++i) {
    EXPECT_TRUE(torch::allclose(Row(a.embeddings, i), Row(b.embeddings, 9 - i), 1e-5, 1e-5)) << i;
  }
  EXPECT_TRUE(torch::allclose(Row(a.embeddings, 1), Row(a.embeddings, 3), 1e-5, 1e-6));  // the repeated utterance

  // Without cutting, every embedding is that of the whole utterance.
  o.max_cut_portion = 0;
  const auto whole = extractor.Extract(*data.source, list, o);
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto expected = EmbedFirstFrames(*net, *data.source, list[i], data.source->NumFrames(list[i]));
    EXPECT_TRUE(torch::allclose(Row(whole.embeddings, static_cast<std::int64_t>(i)), expected, 1e-4, 1e-5)) << i;
  }
}

TEST(EmbeddingExtractorTest, TruncatesOverlongUtterancesToTheBudget) {
  const auto data = testing::MakeSyntheticData({});
  auto net = TrainedLookingNet();
  EmbeddingExtractor extractor(net.ptr(), "cpu");
  ExtractionOptions o;
  o.max_batch_size_in_frames = 70;  // synthetic utterances have 60..160 frames
  o.workers = 0;
  std::vector<int> list;
  for (int u = 0; u < 20; ++u) list.push_back(u);
  const auto r = extractor.Extract(*data.source, list, o);
  std::size_t over = 0;
  for (int u : list) over += data.source->NumFrames(u) > 70 ? 1 : 0;
  EXPECT_EQ(r.truncated.size(), over);
  ASSERT_FALSE(r.truncated.empty());
  const auto pos = r.truncated.front();
  EXPECT_TRUE(torch::allclose(Row(r.embeddings, static_cast<std::int64_t>(pos)),
                              EmbedFirstFrames(*net, *data.source, list[pos], 70), 1e-4, 1e-5));
  EXPECT_GE(r.batches, static_cast<std::int64_t>(over));
}

TEST(EmbeddingExtractorTest, EmptyUtterancesAreAnErrorOrSkipped) {
  auto net = TrainedLookingNet();
  Matrix speech(50, 30, 0.5f);
  data::InMemoryFeatureSource source({speech, Matrix(0, 30), speech}, {"a", "silent", "c"});
  EmbeddingExtractor extractor(net.ptr(), "cpu");
  ExtractionOptions o;
  try {
    extractor.Extract(source, {0, 1, 2}, o);
    FAIL() << "expected DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("silent"), std::string::npos) << e.what();
  }
  o.skip_empty = true;
  const auto r = extractor.Extract(source, {0, 1, 2}, o);
  EXPECT_EQ(r.skipped, (std::vector<std::size_t>{1}));
  for (std::int64_t c = 0; c < r.embeddings.cols(); ++c) {
    EXPECT_EQ(r.embeddings(1, c), 0.f);
    EXPECT_TRUE(std::isfinite(r.embeddings(0, c)));
  }
}

TEST(EmbeddingExtractorTest, NonFiniteOutputsAreAnError) {
  const auto data = testing::MakeSyntheticData({});
  auto net = TrainedLookingNet();
  {
    torch::NoGradGuard g;
    net->embedding_layer->linear->weight[0][0] = std::nanf("");
  }
  net->train();
  EmbeddingExtractor extractor(net.ptr(), "cpu");
  EXPECT_THROW(extractor.Extract(*data.source, {0, 1}, ExtractionOptions{}), StageError);
  EXPECT_TRUE(net->is_training());  // mode restored on error too
}

TEST(EmbeddingExtractorTest, FromCheckpointMatchesTrainer) {
  const auto dir = std::filesystem::temp_directory_path() / ("asv_extractor_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto data = testing::MakeSyntheticData({});
  TrainerOptions options;
  options.network = SmallNet();
  options.network.min_clip_size = 20;
  options.network.max_clip_size = 30;
  options.network.minibatch_size = 16;
  options.network.utts_per_speaker_in_epoch = 4;
  options.network.validation_utterances = 0;
  options.checkpoint_folder = dir;
  Trainer trainer(options, data);
  trainer.TrainEpoch();
  std::vector<int> list = {5, 1, 33};
  ExtractionOptions o;
  const auto from_trainer = trainer.ExtractEmbeddings(*data.source, list, o);
  const auto extractor = EmbeddingExtractor::FromCheckpoint(CheckpointPath(dir, 1), options.network, "cpu");
  EXPECT_EQ(extractor.embedding_size(), 16);
  const auto from_file = extractor.Extract(*data.source, list, o);
  EXPECT_EQ(from_file.embeddings, from_trainer.embeddings);

  auto other = options.network;
  other.network_class = "StandardSeNet";
  EXPECT_THROW(EmbeddingExtractor::FromCheckpoint(CheckpointPath(dir, 1), other, "cpu"), DataError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace asv::train
