// SyncBatchNorm (asvcpp/nnet/sync_batch_norm.h): W ranks, each with its share of a minibatch of B
// examples, must compute what one process computes with all B examples and plain BatchNorm: the
// outputs, the running statistics, the input gradients (each rank its rows) and the weight and
// bias gradients (summed over ranks), to a relative 1e-5 in float32. The ranks are threads of this
// process joined by a Gloo process group over a FileStore (an in-process all-reduce when the
// LibTorch build has no Gloo). The loss of a rank is Σ y·G over its rows, G fixed and random, so
// that the ranks' losses add up to the single process's.
#include "asvcpp/nnet/sync_batch_norm.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/nnet/margin_heads.h"
#include "asvcpp/nnet/resnet.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"

// The c10d headers compile to nothing without LibTorch's own USE_C10D_GLOO.
#if defined(ASV_WITH_GLOO) && defined(USE_C10D_GLOO)
#define ASV_TEST_GLOO 1
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif

namespace asv::nnet {
namespace {

namespace stdfs = std::filesystem;

#ifdef ASV_TEST_GLOO
// One rank of a Gloo group on 127.0.0.1; the constructor waits for the other ranks.
class GlooSum final : public CrossRankSum {
 public:
  GlooSum(const std::string& store_file, int rank, int world) : rank_(rank), world_(world) {
    auto store = c10::make_intrusive<c10d::FileStore>(store_file, world);
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(60000));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    group_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
  }
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  void AllReduceSum(torch::Tensor& tensor) override {
    std::vector<at::Tensor> v{tensor};
    group_->allreduce(v)->wait();
  }

 private:
  int rank_, world_;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group_;
};
#else
// Without Gloo: the ranks' threads sum through shared memory (a barrier per all-reduce).
struct ThreadGroup {
  std::mutex mutex;
  std::condition_variable done;
  int arrived = 0;
  std::uint64_t generation = 0;
  torch::Tensor accumulator, result;
};

class ThreadSum final : public CrossRankSum {
 public:
  ThreadSum(std::shared_ptr<ThreadGroup> group, int rank, int world)
      : group_(std::move(group)), rank_(rank), world_(world) {}
  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  void AllReduceSum(torch::Tensor& tensor) override {
    auto& g = *group_;
    std::unique_lock<std::mutex> lock(g.mutex);
    g.accumulator = g.accumulator.defined() ? g.accumulator + tensor : tensor.clone();
    const std::uint64_t mine = g.generation;
    if (++g.arrived == world_) {
      g.result = g.accumulator;
      g.accumulator = torch::Tensor();
      g.arrived = 0;
      ++g.generation;
      g.done.notify_all();
    } else {
      g.done.wait(lock, [&] { return g.generation != mine; });
    }
    tensor.copy_(g.result);
  }

 private:
  std::shared_ptr<ThreadGroup> group_;
  int rank_, world_;
};
#endif

// Runs body(rank, sync) on `world` threads, each rank with its CrossRankSum; rethrows the first
// rank's exception.
void RunRanks(int world, const std::function<void(int, const std::shared_ptr<CrossRankSum>&)>& body) {
  static std::atomic<int> groups{0};
  const stdfs::path store_file = stdfs::temp_directory_path() /
                                 ("asv_sync_bn_test_" + std::to_string(::getpid()) + "_" + std::to_string(++groups));
  stdfs::remove(store_file);
#ifndef ASV_TEST_GLOO
  auto shared = std::make_shared<ThreadGroup>();
#endif
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world));
  // Every rank's group lives until all ranks are done: a rank that finished first and closed its
  // connections would fail the others' Gloo pairs ("Connection closed by peer").
  std::vector<std::shared_ptr<CrossRankSum>> groups_alive(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
#ifdef ASV_TEST_GLOO
        std::shared_ptr<CrossRankSum> sync = std::make_shared<GlooSum>(store_file.string(), r, world);
#else
        std::shared_ptr<CrossRankSum> sync = std::make_shared<ThreadSum>(shared, r, world);
#endif
        groups_alive[static_cast<std::size_t>(r)] = sync;
        body(r, sync);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  groups_alive.clear();
  stdfs::remove(store_file);
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// max |a − b| relative to max |b| (float32 rounding of a different summation order stays below
// 1e-5 of a tensor's scale).
double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  const double scale = b.abs().max().item<double>();
  return (a.to(torch::kFloat64) - b.to(torch::kFloat64)).abs().max().item<double>() / std::max(scale, 1e-30);
}

constexpr double kTolerance = 1e-5;

// A one-rank CrossRankSum: the identity.
class SingleRank final : public CrossRankSum {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void AllReduceSum(torch::Tensor&) override { ++calls; }
  int calls = 0;
};

// A CrossRankSum of two ranks that must not be used.
class Untouchable final : public CrossRankSum {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void AllReduceSum(torch::Tensor&) override { throw std::logic_error("a collective was issued"); }
};

// ---- single BatchNorm modules ----------------------------------------------------------------

// What a rank (or the single process) ends with after one training forward and backward pass.
struct BnRun {
  torch::Tensor y, dx, dweight, dbias, running_mean, running_var;
  std::int64_t batches_tracked = 0;
};

template <class Bn>
BnRun RunBatchNorm(Bn& bn, const torch::Tensor& x_in, const torch::Tensor& g) {
  bn->train();
  const torch::Tensor x = x_in.clone().requires_grad_(true);
  const torch::Tensor y = ApplyBatchNorm(*bn, x);
  (y * g).sum().backward();
  BnRun r;
  r.y = y.detach();
  r.dx = x.grad();
  r.dweight = bn->weight.grad().clone();
  r.dbias = bn->bias.grad().clone();
  r.running_mean = bn->running_mean.clone();
  r.running_var = bn->running_var.clone();
  r.batches_tracked = bn->num_batches_tracked.template item<std::int64_t>();
  return r;
}

// A BatchNorm with non-trivial weight, bias and running statistics, the same for every seed use.
template <class Bn, class Options>
Bn MakeBn(std::int64_t channels, c10::optional<double> momentum = 0.1) {
  Bn bn(Options(channels).momentum(momentum));
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  bn->weight.uniform_(0.5, 1.5);
  bn->bias.uniform_(-0.5, 0.5);
  bn->running_mean.uniform_(-1, 1);
  bn->running_var.uniform_(0.5, 2);
  return bn;
}

// Runs the single process and `splits.size()` ranks (rank r: the next splits[r] rows) on x and
// compares them. `sync` false: the ranks normalise alone (the results must then differ).
template <class Bn, class Options>
void CompareRanks(const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& splits, bool sync,
                  c10::optional<double> momentum = 0.1) {
  torch::manual_seed(11);
  // A mean of 3 and a spread of 2 per channel, different per channel.
  const std::int64_t channels = shape[1];
  std::vector<std::int64_t> per_channel(shape.size(), 1);
  per_channel[1] = channels;
  const torch::Tensor x = torch::randn(shape) * (1 + torch::rand(per_channel)) + 3 * torch::randn(per_channel);
  const torch::Tensor g = torch::randn(shape);

  Bn single = MakeBn<Bn, Options>(channels, momentum);
  const BnRun expected = RunBatchNorm(single, x, g);

  const int world = static_cast<int>(splits.size());
  std::vector<Bn> bns;  // made here: the threads must not reseed the global generator
  for (int r = 0; r < world; ++r) bns.push_back(MakeBn<Bn, Options>(channels, momentum));
  const Bn initial = MakeBn<Bn, Options>(channels, momentum);
  std::vector<BnRun> runs(splits.size());
  std::vector<std::int64_t> starts{0};
  for (auto s : splits) starts.push_back(starts.back() + s);
  ASSERT_EQ(starts.back(), shape[0]);
  RunRanks(world, [&](int r, const std::shared_ptr<CrossRankSum>& sum) {
    const auto k = static_cast<std::size_t>(r);
    const SyncBatchNormScope scope(sync ? sum : nullptr);
    runs[k] = RunBatchNorm(bns[k], x.narrow(0, starts[k], splits[k]), g.narrow(0, starts[k], splits[k]));
  });

  std::vector<torch::Tensor> ys, dxs;
  torch::Tensor dweight = torch::zeros_like(expected.dweight), dbias = torch::zeros_like(expected.dbias);
  for (const auto& run : runs) {
    ys.push_back(run.y);
    dxs.push_back(run.dx);
    dweight += run.dweight;
    dbias += run.dbias;
  }
  const double y_error = RelativeError(torch::cat(ys), expected.y);
  if (!sync) {
    // Each rank's own statistics: outputs and running statistics are not the single process's.
    EXPECT_GT(y_error, 1e-3);
    for (const auto& run : runs) EXPECT_GT(RelativeError(run.running_var, expected.running_var), 1e-3);
    return;
  }
  EXPECT_LE(y_error, kTolerance);
  EXPECT_LE(RelativeError(torch::cat(dxs), expected.dx), kTolerance);
  EXPECT_LE(RelativeError(dweight, expected.dweight), kTolerance);
  EXPECT_LE(RelativeError(dbias, expected.dbias), kTolerance);
  for (const auto& run : runs) {
    EXPECT_LE(RelativeError(run.running_mean, expected.running_mean), kTolerance);
    EXPECT_LE(RelativeError(run.running_var, expected.running_var), kTolerance);
    EXPECT_EQ(run.batches_tracked, expected.batches_tracked);
    // The same on every rank, bit for bit.
    EXPECT_TRUE(torch::equal(run.running_mean, runs[0].running_mean));
    EXPECT_TRUE(torch::equal(run.running_var, runs[0].running_var));
  }
  // The statistics moved: the test would notice a missing update.
  EXPECT_GT(RelativeError(expected.running_var, initial->running_var), 1e-2);
}

using Bn1 = torch::nn::BatchNorm1d;
using Bn1Options = torch::nn::BatchNorm1dOptions;
using Bn2 = torch::nn::BatchNorm2d;
using Bn2Options = torch::nn::BatchNorm2dOptions;

TEST(SyncBatchNormTest, TwoRanksMatchOneRankOnBatchChannels) {
  CompareRanks<Bn1, Bn1Options>({8, 6}, {4, 4}, true);
  CompareRanks<Bn1, Bn1Options>({8, 6}, {5, 3}, true);  // unequal shares weigh by their counts
  CompareRanks<Bn1, Bn1Options>({4, 5}, {1, 3}, true);  // a rank with one value per channel
}

TEST(SyncBatchNormTest, TwoRanksMatchOneRankOnBatchChannelsFrames) {
  CompareRanks<Bn1, Bn1Options>({6, 5, 7}, {3, 3}, true);
}

TEST(SyncBatchNormTest, TwoRanksMatchOneRankOnBatchNorm2d) {
  CompareRanks<Bn2, Bn2Options>({4, 3, 5, 6}, {2, 2}, true);
}

TEST(SyncBatchNormTest, ThreeRanksWithUnequalSharesMatchOneRank) {
  CompareRanks<Bn1, Bn1Options>({9, 4, 5}, {2, 3, 4}, true);
  CompareRanks<Bn1, Bn1Options>({7, 4, 5}, {3, 0, 4}, true);  // a rank without examples
}

TEST(SyncBatchNormTest, CumulativeAverageWithoutMomentumMatchesOneRank) {
  CompareRanks<Bn1, Bn1Options>({6, 5, 7}, {3, 3}, true, c10::nullopt);
}

TEST(SyncBatchNormTest, WithoutSyncTheRanksDifferFromOneRank) {
  CompareRanks<Bn1, Bn1Options>({8, 6}, {4, 4}, false);
  CompareRanks<Bn1, Bn1Options>({6, 5, 7}, {3, 3}, false);
  CompareRanks<Bn2, Bn2Options>({4, 3, 5, 6}, {2, 2}, false);
}

TEST(SyncBatchNormTest, OneRankSyncFunctionMatchesBatchNorm) {
  torch::manual_seed(5);
  const torch::Tensor x = torch::randn({6, 4, 9}) * 2 + 1;
  const torch::Tensor g = torch::randn({6, 4, 9});
  Bn1 plain = MakeBn<Bn1, Bn1Options>(4);
  const BnRun expected = RunBatchNorm(plain, x, g);

  Bn1 bn = MakeBn<Bn1, Bn1Options>(4);
  auto one = std::make_shared<SingleRank>();
  const torch::Tensor xs = x.clone().requires_grad_(true);
  const torch::Tensor y = SyncBatchNorm(xs, bn->weight, bn->bias, bn->running_mean, bn->running_var, 0.1, 1e-5, one);
  (y * g).sum().backward();
  EXPECT_EQ(one->calls, 2);  // statistics in the forward pass, gradient sums in the backward pass
  EXPECT_LE(RelativeError(y, expected.y), kTolerance);
  EXPECT_LE(RelativeError(xs.grad(), expected.dx), kTolerance);
  EXPECT_LE(RelativeError(bn->weight.grad(), expected.dweight), kTolerance);
  EXPECT_LE(RelativeError(bn->bias.grad(), expected.dbias), kTolerance);
  EXPECT_LE(RelativeError(bn->running_mean, expected.running_mean), kTolerance);
  EXPECT_LE(RelativeError(bn->running_var, expected.running_var), kTolerance);

  // Without affine parameters and running statistics.
  const torch::Tensor plain_y = torch::batch_norm(x, {}, {}, {}, {}, true, 0.1, 1e-5, false);
  EXPECT_LE(RelativeError(SyncBatchNorm(x, {}, {}, {}, {}, 0.1, 1e-5, one), plain_y), kTolerance);
}

TEST(SyncBatchNormTest, ModuleForwardWhenEvalOrOneRankOrNoScope) {
  torch::manual_seed(6);
  const torch::Tensor x = torch::randn({5, 3, 4});
  Bn1 a = MakeBn<Bn1, Bn1Options>(3);
  Bn1 b = MakeBn<Bn1, Bn1Options>(3);
  {
    // Eval mode: running statistics, no collective even with a scope of two ranks.
    const SyncBatchNormScope scope(std::make_shared<Untouchable>());
    a->eval();
    b->eval();
    EXPECT_TRUE(torch::equal(ApplyBatchNorm(*a, x), b(x)));
  }
  a->train();
  b->train();
  EXPECT_EQ(CurrentBatchNormSync(), nullptr);
  EXPECT_TRUE(torch::equal(ApplyBatchNorm(*a, x), b(x)));  // no scope
  {
    auto one = std::make_shared<SingleRank>();
    const SyncBatchNormScope scope(one);
    EXPECT_EQ(CurrentBatchNormSync(), one);
    EXPECT_TRUE(torch::equal(ApplyBatchNorm(*a, x), b(x)));  // world size 1: the module's forward
    EXPECT_EQ(one->calls, 0);
    {
      const SyncBatchNormScope inner(nullptr);
      EXPECT_EQ(CurrentBatchNormSync(), nullptr);
    }
    EXPECT_EQ(CurrentBatchNormSync(), one);
  }
  EXPECT_TRUE(torch::equal(a->running_mean, b->running_mean));
  EXPECT_TRUE(torch::equal(a->running_var, b->running_var));
  EXPECT_EQ(a->num_batches_tracked.item<std::int64_t>(), 2);

  // Wrong ranks and channel counts: the module's own errors, before any collective.
  const SyncBatchNormScope scope(std::make_shared<Untouchable>());
  EXPECT_THROW(ApplyBatchNorm(*a, torch::randn({2, 3, 4, 5})), c10::Error);
  EXPECT_THROW(ApplyBatchNorm(*a, torch::randn({2, 4, 5})), c10::Error);
  Bn2 c = MakeBn<Bn2, Bn2Options>(3);
  EXPECT_THROW(ApplyBatchNorm(*c, x), c10::Error);
  auto one = std::make_shared<SingleRank>();
  EXPECT_THROW(SyncBatchNorm(torch::randn({4}), {}, {}, {}, {}, 0.1, 1e-5, one), std::invalid_argument);
  EXPECT_THROW(SyncBatchNorm(x, torch::ones({4}), {}, {}, {}, 0.1, 1e-5, one), std::invalid_argument);
  EXPECT_THROW(SyncBatchNorm(x, {}, {}, {}, {}, 0.1, 1e-5, nullptr), std::invalid_argument);
}

TEST(SyncBatchNormTest, FewerThanTwoValuesPerChannelThrowOnEveryRank) {
  const torch::Tensor x = torch::randn({1, 3});
  std::vector<int> threw(2, 0);
  std::vector<Bn1> bns{MakeBn<Bn1, Bn1Options>(3), MakeBn<Bn1, Bn1Options>(3)};
  RunRanks(2, [&](int r, const std::shared_ptr<CrossRankSum>& sum) {
    const SyncBatchNormScope scope(sum);
    try {
      ApplyBatchNorm(*bns[static_cast<std::size_t>(r)], r == 0 ? x : x.narrow(0, 0, 0));  // 1 + 0 rows
    } catch (const DataError& e) {
      threw[static_cast<std::size_t>(r)] =
          std::string(e.what()).find("1 value(s) per channel over all 2 ranks") != std::string::npos;
    }
  });
  EXPECT_EQ(threw, std::vector<int>({1, 1}));
}

// ---- whole networks ------------------------------------------------------------------------

// A rank's (or the single process's) results of one training step of a network.
struct NetRun {
  torch::Tensor logits, dx;
  std::vector<torch::Tensor> grads, buffers;
};

NetRun RunNet(SpeakerNet& net, const torch::Tensor& x_in, const torch::Tensor& labels, const torch::Tensor& g) {
  net.train();
  const torch::Tensor x = x_in.clone().requires_grad_(true);
  const torch::Tensor logits = net.Logits(x, labels);
  (logits * g).sum().backward();
  NetRun r;
  r.logits = logits.detach();
  r.dx = x.grad();
  for (const auto& p : net.parameters()) r.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::Tensor());
  for (const auto& b : net.buffers()) r.buffers.push_back(b.clone());
  return r;
}

// Two ranks with half of a minibatch of 6 each against one process with all 6, the networks and
// data in `dtype`.
//  - float32: logits and feature gradients of the ranks against exact arithmetic (the same
//    network and data in float64) to a relative 1e-5 of their scale, or to twice the single
//    process's own error where that is larger: how far float32 lands from exact depends on the
//    CPU's convolution kernels (the ResNet's feature gradients on an AMD EPYC with AVX-512,
//    Debian's LibTorch 1.13: the single process 1.2e-5, the ranks 1.5e-5, each other 2.7e-5).
//    Running statistics to 1e-5 of their scale and parameter gradients to 1e-5 of the network's
//    largest gradient, against the single process. Per tensor, float32 gradients cannot agree
//    better than the single process's own rounding: up to 2e-4 with channels-last convolutions
//    (hence tested in float64 only), and its biases right before a batch norm (exactly 0 in exact
//    arithmetic: the normalisation removes them) are pure rounding.
//  - float64: everything to a relative 1e-9 of each tensor's scale (gradients: at least 1e-6 of
//    the largest, for those zero-gradient biases): the ranks compute what the single process
//    computes, not merely something close.
void CompareNetworks(const std::function<std::shared_ptr<SpeakerNet>()>& make, const torch::Tensor& x_in,
                     std::int64_t classes, torch::ScalarType dtype) {
  const bool f64 = dtype == torch::kFloat64;
  const double tolerance = f64 ? 1e-9 : kTolerance;
  const double grad_floor = f64 ? 1e-6 : 1.0;  // of the largest gradient
  const torch::Tensor x = x_in.to(dtype);
  const std::int64_t half = x.size(0) / 2;
  torch::manual_seed(21);
  const torch::Tensor labels = torch::randint(classes, {x.size(0)}, torch::kInt64);
  const torch::Tensor g = torch::randn({x.size(0), classes}).to(dtype);
  std::vector<std::shared_ptr<SpeakerNet>> nets;  // the single process's, then the ranks'
  for (int r = 0; r < 3; ++r) {
    torch::manual_seed(7);
    nets.push_back(make());
    nets.back()->to(dtype);
  }
  const NetRun expected = RunNet(*nets[0], x, labels, g);
  std::optional<NetRun> exact;  // float32: the same network and data in float64
  if (!f64) {
    torch::manual_seed(7);
    const auto net = make();
    net->to(torch::kFloat64);
    exact = RunNet(*net, x_in.to(torch::kFloat64), labels, g.to(torch::kFloat64));
  }
  // The ranks' result against exact arithmetic, as close as the single process's (float32), or
  // against the single process (float64).
  const auto expect_close = [&](const torch::Tensor& ranks, const torch::Tensor& single,
                                const std::optional<torch::Tensor>& reference, const char* what) {
    if (reference) {
      EXPECT_LE(RelativeError(ranks, *reference), std::max(tolerance, 2 * RelativeError(single, *reference))) << what;
    } else {
      EXPECT_LE(RelativeError(ranks, single), tolerance) << what;
    }
  };
  std::vector<NetRun> runs(2);
  const auto rank_run = [&](int r) {
    const auto k = static_cast<std::size_t>(r);
    return RunNet(*nets[k + 1], x.narrow(0, r * half, half), labels.narrow(0, r * half, half),
                  g.narrow(0, r * half, half));
  };
  RunRanks(2, [&](int r, const std::shared_ptr<CrossRankSum>& sum) {
    const SyncBatchNormScope scope(sum);
    runs[static_cast<std::size_t>(r)] = rank_run(r);
  });
  expect_close(torch::cat({runs[0].logits, runs[1].logits}), expected.logits,
               exact ? std::optional<torch::Tensor>(exact->logits) : std::nullopt, "logits");
  expect_close(torch::cat({runs[0].dx, runs[1].dx}), expected.dx,
               exact ? std::optional<torch::Tensor>(exact->dx) : std::nullopt, "feature gradients");
  const auto names = nets[0]->named_parameters().keys();
  ASSERT_EQ(expected.grads.size(), names.size());
  double largest = 0;
  for (const auto& grad : expected.grads) {
    if (grad.defined()) largest = std::max(largest, grad.abs().max().item<double>());
  }
  int compared = 0;
  for (std::size_t i = 0; i < expected.grads.size(); ++i) {
    if (!expected.grads[i].defined()) continue;
    const torch::Tensor sum = runs[0].grads[i] + runs[1].grads[i];
    const double scale = std::max(expected.grads[i].abs().max().item<double>(), grad_floor * largest);
    EXPECT_LE((sum - expected.grads[i]).abs().max().item<double>() / scale, tolerance) << names[i];
    ++compared;
  }
  EXPECT_GT(compared, 10);
  const auto buffer_names = nets[0]->named_buffers().keys();
  for (std::size_t i = 0; i < expected.buffers.size(); ++i) {
    for (const auto& run : runs) {
      if (expected.buffers[i].is_floating_point()) {
        EXPECT_LE(RelativeError(run.buffers[i], expected.buffers[i]), tolerance) << buffer_names[i];
      } else {
        EXPECT_TRUE(torch::equal(run.buffers[i], expected.buffers[i])) << buffer_names[i];
      }
    }
  }
  // Unsynchronised, the same ranks give other logits (the comparison above can fail).
  std::vector<NetRun> alone(2);
  RunRanks(2, [&](int r, const std::shared_ptr<CrossRankSum>&) { alone[static_cast<std::size_t>(r)] = rank_run(r); });
  EXPECT_GT(RelativeError(torch::cat({alone[0].logits, alone[1].logits}), expected.logits), 1e-3);
}

MarginHeadOptions Head(HeadType type) {
  MarginHeadOptions o;
  o.type = type;
  o.scale = 8;
  o.embed_dim = 8;
  o.num_classes = 5;
  return o;
}

// A ResNet of one BasicBlock per stage (8 base channels, 16 fbank bins, 8-dim embeddings) with
// WeSpeaker's softmax head: BatchNorm2d everywhere (projection shortcuts included), and the head's
// BatchNorm1d.
std::shared_ptr<SpeakerNet> TinyResNetWithSoftmax(bool channels_last) {
  ResNetOptions o = ResNet34Options(16, 8);
  o.m_channels = 8;
  o.num_blocks = {1, 1, 1, 1};
  o.channels_last = channels_last;
  ResNet resnet(o);
  SpeakerNetInfo info;
  info.architecture = "ResNet";
  info.feat_dim = 16;
  info.n_speakers = 5;
  info.embedding_size = 8;
  info.layout = FeatureLayout::kFramesFirst;
  auto model = resnet.ptr();
  return MarginNet(
             model, [model](const torch::Tensor& x) { return model->forward(x); }, info,
             MakeMarginHead(Head(HeadType::kSoftmax)))
      .ptr();
}

std::shared_ptr<SpeakerNet> TinyEcapaTdnnWithArcMargin() {
  return MakeMarginNet("ECAPA_TDNN_GLOB_c512", 8, 8, 5, Head(HeadType::kArcMargin), 16).ptr();
}

// StandardResSeNet: frame layers (frames-major in float32), squeeze-excitation and the embedding
// layer's batch norm.
std::shared_ptr<SpeakerNet> TinyXvectorNet() {
  XvectorNetOptions o;
  o.architecture = Architecture::kStandardResSeNet;
  o.feat_dim = 6;
  o.n_speakers = 5;
  o.frame_layer_size = 16;
  o.stat_size = 12;
  o.embedding_size = 8;
  o.ser = 4;
  return XvectorNet(o).ptr();
}

TEST(SyncBatchNormTest, ResNetWithSoftmaxHeadMatchesOneRank) {
  torch::manual_seed(1);
  const torch::Tensor x = torch::randn({6, 24, 16});  // [batch, frames, feat_dim]
  CompareNetworks([] { return TinyResNetWithSoftmax(false); }, x, 5, torch::kFloat32);
  CompareNetworks([] { return TinyResNetWithSoftmax(false); }, x, 5, torch::kFloat64);
  CompareNetworks([] { return TinyResNetWithSoftmax(true); }, x, 5, torch::kFloat64);
}

TEST(SyncBatchNormTest, EcapaTdnnMatchesOneRank) {
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({6, 20, 8});
  CompareNetworks(TinyEcapaTdnnWithArcMargin, x, 5, torch::kFloat32);
  CompareNetworks(TinyEcapaTdnnWithArcMargin, x, 5, torch::kFloat64);
}

TEST(SyncBatchNormTest, XvectorNetMatchesOneRank) {
  torch::manual_seed(3);
  const torch::Tensor x = torch::randn({6, 6, 15}) + 1;  // [batch, feat_dim, frames]
  CompareNetworks(TinyXvectorNet, x, 5, torch::kFloat32);
  CompareNetworks(TinyXvectorNet, x, 5, torch::kFloat64);
}

}  // namespace
}  // namespace asv::nnet
