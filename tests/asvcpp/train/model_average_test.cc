#include "asvcpp/train/model_average.h"

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/train/checkpoint.h"

namespace asv::train {
namespace {

namespace stdfs = std::filesystem;

stdfs::path TempFolder(const std::string& name) {
  auto p = stdfs::temp_directory_path() / ("asv_model_average_test_" + name + "_" + std::to_string(::getpid()));
  stdfs::remove_all(p);
  stdfs::create_directories(p);
  return p;
}

// A tiny network with parameters, float buffers and an integer buffer (num_batches_tracked).
struct TinyNet : torch::nn::Module {
  TinyNet() {
    linear = register_module("linear", torch::nn::Linear(3, 2));
    bn = register_module("bn", torch::nn::BatchNorm1d(2));
  }
  torch::nn::Linear linear{nullptr};
  torch::nn::BatchNorm1d bn{nullptr};
};

CheckpointMeta Meta(int epoch) {
  CheckpointMeta meta;
  meta.architecture = "TinyNet";
  meta.feat_dim = 3;
  meta.n_speakers = 2;
  meta.embedding_size = 2;
  meta.epoch = epoch;
  meta.sampler_seed = 1000 + static_cast<std::uint64_t>(epoch);
  return meta;
}

// Fills every float tensor of `net` with random values and num_batches_tracked with `batches`.
void Randomize(TinyNet& net, std::int64_t batches) {
  torch::NoGradGuard no_grad;
  for (auto& p : net.named_parameters()) p.value().copy_(torch::randn(p.value().sizes()));
  net.bn->running_mean.copy_(torch::randn({2}));
  net.bn->running_var.copy_(torch::rand({2}) + 0.5);
  net.bn->num_batches_tracked.fill_(batches);
}

std::map<std::string, torch::Tensor> Snapshot(TinyNet& net) {
  std::map<std::string, torch::Tensor> state;
  for (auto& p : net.named_parameters()) state[p.key()] = p.value().detach().clone();
  for (auto& b : net.named_buffers()) state[b.key()] = b.value().detach().clone();
  return state;
}

TEST(ModelAverageTest, ThreeCheckpointsAverageToTheElementWiseMean) {
  const auto dir = TempFolder("mean");
  torch::manual_seed(11);
  std::vector<std::map<std::string, torch::Tensor>> states;
  std::vector<stdfs::path> paths;
  const std::vector<std::int64_t> batches = {50, 70, 110};
  for (int epoch = 1; epoch <= 3; ++epoch) {
    TinyNet net;
    Randomize(net, batches[epoch - 1]);
    states.push_back(Snapshot(net));
    paths.push_back(CheckpointPath(dir, epoch));
    WriteCheckpoint(paths.back(), Meta(epoch), net, nullptr);
  }
  const auto output = dir / "avg_model.pt";
  TinyNet model;
  const auto meta = AverageCheckpoints(paths, model, output);
  EXPECT_EQ(meta.epoch, 3);
  EXPECT_EQ(meta.sampler_seed, 1003u);
  ASSERT_TRUE(stdfs::exists(output));
  ASSERT_TRUE(stdfs::exists(dir / "avg_model.pt.sha256"));

  // Read back into a fresh network: the file holds the average.
  TinyNet loaded;
  const auto loaded_meta = ReadCheckpoint(output, loaded, nullptr);
  EXPECT_EQ(loaded_meta.architecture, "TinyNet");
  EXPECT_EQ(loaded_meta.epoch, 3);
  const auto averaged = Snapshot(loaded);
  const auto in_memory = Snapshot(model);
  ASSERT_EQ(averaged.size(), 7u);  // linear weight/bias, bn weight/bias/mean/var/count
  for (const auto& [name, value] : averaged) {
    if (name == "bn.num_batches_tracked") {
      EXPECT_EQ(value.scalar_type(), torch::kInt64);
      EXPECT_EQ(value.item<std::int64_t>(), 110) << "integer buffers keep the newest value";
      continue;
    }
    ASSERT_EQ(value.scalar_type(), torch::kFloat32) << name;
    const auto mean = (states[0].at(name).to(torch::kFloat64) + states[1].at(name).to(torch::kFloat64) +
                       states[2].at(name).to(torch::kFloat64)) /
                      3.0;
    EXPECT_TRUE(torch::allclose(value.to(torch::kFloat64), mean, 0, 1e-7)) << name;
    EXPECT_TRUE(torch::equal(value, in_memory.at(name))) << name;
    // Not just one of the inputs.
    EXPECT_FALSE(torch::allclose(value, states[2].at(name))) << name;
  }
  stdfs::remove_all(dir);
}

TEST(ModelAverageTest, OneCheckpointIsCopiedExactly) {
  const auto dir = TempFolder("one");
  torch::manual_seed(5);
  TinyNet net;
  Randomize(net, 9);
  WriteCheckpoint(CheckpointPath(dir, 4), Meta(4), net, nullptr);
  TinyNet model;
  AverageCheckpoints({CheckpointPath(dir, 4)}, model, /*output=*/{});
  EXPECT_FALSE(stdfs::exists(dir / "avg_model.pt"));
  const auto a = Snapshot(net);
  const auto b = Snapshot(model);
  for (const auto& [name, value] : a) EXPECT_TRUE(torch::equal(value, b.at(name))) << name;
  stdfs::remove_all(dir);
}

TEST(ModelAverageTest, LastCheckpointsPicksTheNewestEpochs) {
  const auto dir = TempFolder("last");
  for (int e = 1; e <= 12; ++e) std::ofstream(CheckpointPath(dir, e)) << "x";
  const auto last = LastCheckpoints(dir, 12);
  ASSERT_EQ(last.size(), static_cast<std::size_t>(kDefaultAverageCount));
  EXPECT_EQ(last.front(), CheckpointPath(dir, 3));
  EXPECT_EQ(last.back(), CheckpointPath(dir, 12));
  EXPECT_EQ(LastCheckpoints(dir, 5, 2), (std::vector<stdfs::path>{CheckpointPath(dir, 4), CheckpointPath(dir, 5)}));
  EXPECT_THROW(LastCheckpoints(dir, 5, 6), DataError);
  EXPECT_THROW(LastCheckpoints(dir, 5, 0), DataError);
  stdfs::remove(CheckpointPath(dir, 8));
  try {
    LastCheckpoints(dir, 12);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("epoch.8.pt"), std::string::npos) << e.what();
  }
  stdfs::remove_all(dir);
}

TEST(ModelAverageTest, RejectsMixedNetworksCorruptFilesAndOverwritingAnInput) {
  const auto dir = TempFolder("errors");
  torch::manual_seed(7);
  TinyNet net;
  Randomize(net, 1);
  WriteCheckpoint(CheckpointPath(dir, 1), Meta(1), net, nullptr);
  auto other = Meta(2);
  other.n_speakers = 3;  // same tensors, but another network by its metadata
  WriteCheckpoint(CheckpointPath(dir, 2), other, net, nullptr);
  TinyNet model;
  try {
    AverageCheckpoints({CheckpointPath(dir, 1), CheckpointPath(dir, 2)}, model, dir / "avg.pt");
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("epoch.2.pt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("epoch.1.pt"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(stdfs::exists(dir / "avg.pt"));
  EXPECT_THROW(AverageCheckpoints({}, model, dir / "avg.pt"), DataError);
  EXPECT_THROW(AverageCheckpoints({CheckpointPath(dir, 1)}, model, CheckpointPath(dir, 1)), DataError);
  EXPECT_THROW(AverageCheckpoints({CheckpointPath(dir, 1)}, model, dir / "." / "epoch.1.pt"), DataError);

  // A flipped byte: the checksum file catches it.
  WriteCheckpoint(CheckpointPath(dir, 3), Meta(3), net, nullptr);
  {
    std::fstream f(CheckpointPath(dir, 3), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    char c = 0;
    f.read(&c, 1);
    f.seekp(100);
    c = static_cast<char>(c ^ 0x20);
    f.write(&c, 1);
  }
  EXPECT_THROW(AverageCheckpoints({CheckpointPath(dir, 1), CheckpointPath(dir, 3)}, model, dir / "avg.pt"), DataError);
  EXPECT_FALSE(stdfs::exists(dir / "avg.pt"));

  // A network that does not match the files.
  torch::nn::Linear wrong(3, 2);
  EXPECT_THROW(AverageCheckpoints({CheckpointPath(dir, 1)}, *wrong, dir / "avg.pt"), DataError);
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace asv::train
