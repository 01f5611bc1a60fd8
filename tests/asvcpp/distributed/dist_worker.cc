// One rank of a data-parallel test job (process_group_test.cc starts several). Gloo over
// 127.0.0.1; the world comes from the command line, not from the environment:
//
//   asv_dist_worker MODE rank=R world=W port=P [external=1] [poll_ms=50] [bucket_bytes=N]
//                   [log=debug] [key=value ...]
//
// Modes:
//   collectives  store coordination, statistics, flags, barriers, model/buffer sync and the
//                gradient reducer (overlapped and fallback paths) against values computed locally;
//                prints "OK" and exits 0, or prints what differs and exits 1
//   train        a Trainer on synthetic data (minibatch=, interval=, epochs=, max_lr_updates=,
//                resume=, folder=, out=, sync_bn=1 for network.sync_batch_norm); writes its parameters
//                to OUT.start.RANK.pt after Start() and OUT.RANK.pt at the end, its buffers to
//                OUT.buffers.RANK.pt (world=1: a single process without a group)
//   syncbn       SyncBatchNorm over the reducer (train::MakeBatchNormSync), gradients reduced by
//                its hooks during the backward pass: a ResNet with WeSpeaker's softmax head and an
//                x-vector network, each rank with its share of a minibatch, against one process
//                with the whole minibatch (float64); prints "OK" and exits 0, or what differs and 1
//   fail         rank 1 reports an error, rank 0 idles until its watchdog ends it
//   fail-wait    as fail, but rank 0 has its own peer-failure handler and waits in WaitFor, which
//                must throw naming rank 1
//   sequential   three groups one after the other on the same store address
//   hang         all ranks print "ready" and idle (the test kills one)
// Exit status: 0 success, 1 failure (error reported to the other ranks), 5 peer failure (watchdog).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <torch/torch.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/distributed/process_group.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/sync_batch_norm.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/train/batch_norm_sync.h"
#include "asvcpp/train/gradient_reducer.h"
#include "asvcpp/train/trainer.h"
#include "tests/asvcpp/train/synthetic_data.h"

namespace {

using asv::distributed::ProcessGroup;
using asv::distributed::ProcessGroupOptions;

struct Args {
  std::string mode;
  std::map<std::string, std::string> values;

  std::string Get(const std::string& key, const std::string& fallback = "") const {
    const auto it = values.find(key);
    return it == values.end() ? fallback : it->second;
  }
  int Int(const std::string& key, int fallback) const {
    const auto v = Get(key);
    return v.empty() ? fallback : std::stoi(v);
  }
};

Args Parse(int argc, char** argv) {
  if (argc < 2) throw std::runtime_error("usage: asv_dist_worker MODE rank=R world=W port=P [key=value ...]");
  Args a;
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string s = argv[i];
    const auto eq = s.find('=');
    if (eq == std::string::npos) throw std::runtime_error("expected key=value, got " + s);
    a.values[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return a;
}

ProcessGroupOptions Options(const Args& a) {
  ProcessGroupOptions o;
  o.world.protocol = asv::distributed::LaunchProtocol::kAsvrun;
  o.world.rank = a.Int("rank", 0);
  o.world.world_size = a.Int("world", 1);
  o.world.local_rank = o.world.rank;
  o.world.local_world_size = o.world.world_size;
  o.world.master_addr = "127.0.0.1";
  o.world.master_port = a.Int("port", 0);
  o.world.store_hosted_externally = a.Int("external", 0) != 0;
  o.device = "cpu";
  o.collective_timeout = std::chrono::seconds(60);
  o.connect_timeout = std::chrono::seconds(60);
  o.poll = std::chrono::milliseconds(a.Int("poll_ms", 50));
  o.bucket_bytes = static_cast<std::size_t>(a.Int("bucket_bytes", 25 << 20));
  return o;
}

// ---- collectives ---------------------------------------------------------------------------------

struct TinyNetImpl : torch::nn::Module {
  // Registered first, so that their gradients come last in the reducer's buckets (reverse
  // parameter order) and the buckets of `b` and `a` can start during backward.
  TinyNetImpl() {
    never = register_module("never", torch::nn::Linear(2, 2));  // used by nobody
    extra = register_module("extra", torch::nn::Linear(2, 2));  // used by odd ranks only
    a = register_module("a", torch::nn::Linear(4, 3));
    b = register_module("b", torch::nn::Linear(3, 2));
    stat = register_buffer("stat", torch::zeros({3}));
    count = register_buffer("count", torch::zeros({1}, torch::kInt64));
  }
  torch::Tensor forward(const torch::Tensor& x, bool use_extra) {
    auto y = b(torch::tanh(a(x)));
    return use_extra ? y + extra(y) : y;
  }
  torch::nn::Linear a{nullptr}, b{nullptr}, extra{nullptr}, never{nullptr};
  torch::Tensor stat, count;
};
TORCH_MODULE(TinyNet);

class Checker {
 public:
  void Expect(bool ok, const std::string& what) {
    if (!ok) {
      std::cout << "FAILED: " << what << std::endl;
      ++failures_;
    }
  }
  int failures() const { return failures_; }

 private:
  int failures_ = 0;
};

void ZeroGrads(TinyNet& net) {
  for (auto& p : net->parameters()) p.mutable_grad() = torch::Tensor();
}

// Loss of rank `r`, microbatch `k` (deterministic inputs), scaled for `interval` microbatches.
void Backward(TinyNet& net, int r, int k, int interval) {
  torch::manual_seed(static_cast<std::uint64_t>(1000 + 10 * r + k));
  const auto x = torch::randn({5, 4});
  (net->forward(x, r % 2 == 1).pow(2).sum() / interval).backward();
}

// The averaged gradients every rank must end with, computed alone: all ranks' microbatches
// on rank 0's initial network, undefined gradients counted as zeros; undefined when
// no rank has one.
std::vector<torch::Tensor> ExpectedGradients(int world, int interval) {
  std::vector<torch::Tensor> sum;
  for (int r = 0; r < world; ++r) {
    torch::manual_seed(100);  // rank 0's initialisation, which SyncModel gave every rank
    TinyNet net;
    sum.resize(net->parameters().size());
    ZeroGrads(net);
    for (int k = 0; k < interval; ++k) Backward(net, r, k, interval);
    const auto params = net->parameters();
    for (std::size_t i = 0; i < params.size(); ++i) {
      const auto& g = params[i].grad();
      if (!g.defined()) continue;
      sum[i] = sum[i].defined() ? sum[i] + g : g.clone();
    }
  }
  for (auto& s : sum) {
    if (s.defined()) s = s / world;
  }
  return sum;
}

void CheckGradients(Checker& check, TinyNet& net, const std::vector<torch::Tensor>& expected, const std::string& what,
                    const std::vector<bool>& reduced) {
  const auto params = net->parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (!reduced[i]) continue;
    const auto& g = params[i].grad();
    const std::string name = what + " parameter " + std::to_string(i);
    if (!expected[i].defined()) {
      check.Expect(!g.defined(), name + ": gradient should stay undefined");
    } else {
      check.Expect(g.defined() && torch::allclose(g, expected[i], 1e-5, 1e-6), name + ": gradient is not the mean");
    }
  }
}

int Collectives(const Args& args, std::shared_ptr<ProcessGroup>& group) {
  group = ProcessGroup::Create(Options(args));
  const int rank = group->rank();
  const int world = group->world_size();
  auto reducer = group->reducer();
  Checker check;

  check.Expect(reducer->rank() == rank && reducer->world_size() == world, "reducer rank/world size");
  if (rank == 0) group->Signal("hello", "world");
  check.Expect(group->WaitFor("hello") == "world", "Signal/WaitFor");
  group->StoreBarrier("after-hello");

  const auto sums = reducer->AllReduceSum({static_cast<double>(rank), 1.0, 0.5});
  check.Expect(sums == std::vector<double>({world * (world - 1) / 2.0, static_cast<double>(world), 0.5 * world}),
               "AllReduceSum");
  check.Expect(reducer->BroadcastFlag(rank == 0), "BroadcastFlag true");
  check.Expect(!reducer->BroadcastFlag(rank != 0), "BroadcastFlag false");
  reducer->Barrier();

  // SyncModel: every rank ends with rank 0's initialisation.
  torch::manual_seed(static_cast<std::uint64_t>(100 + rank));
  TinyNet net;
  torch::manual_seed(100);
  TinyNet rank0;
  {
    torch::NoGradGuard no_grad;
    net->stat.fill_(rank + 1);
    net->count.fill_(10 * rank + 7);
  }
  reducer->SyncModel(*net);
  const auto p = net->parameters();
  const auto q = rank0->parameters();
  for (std::size_t i = 0; i < p.size(); ++i) check.Expect(torch::equal(p[i], q[i]), "SyncModel parameter");
  check.Expect(net->count.item<std::int64_t>() == 7, "SyncModel integer buffer");
  check.Expect(torch::allclose(net->stat, torch::full({3}, 1.0)), "SyncModel float buffer");

  // SyncBuffers: float buffers averaged, others rank 0's.
  {
    torch::NoGradGuard no_grad;
    net->stat.fill_(rank + 1);
    net->count.fill_(10 * rank + 3);
  }
  reducer->SyncBuffers(*net);
  check.Expect(torch::allclose(net->stat, torch::full({3}, (world + 1) / 2.0)), "SyncBuffers mean");
  check.Expect(net->count.item<std::int64_t>() == 3, "SyncBuffers integer buffer from rank 0");

  const auto all = std::vector<bool>(p.size(), true);
  // Overlapped path, one microbatch.
  ZeroGrads(net);
  reducer->BeginBackward(true);
  Backward(net, rank, 0, 1);
  reducer->ReduceGradients(net->parameters());
  CheckGradients(check, net, ExpectedGradients(world, 1), "hooks, 1 microbatch:", all);

  // Overlapped path, two microbatches, the parameters in another order (same set).
  ZeroGrads(net);
  reducer->BeginBackward(false);
  Backward(net, rank, 0, 2);
  reducer->BeginBackward(true);
  Backward(net, rank, 1, 2);
  auto reversed = net->parameters();
  std::reverse(reversed.begin(), reversed.end());
  reducer->ReduceGradients(reversed);
  CheckGradients(check, net, ExpectedGradients(world, 2), "hooks, 2 microbatches:", all);

  // Fallback: a subset of the parameters, hooks not armed: only the subset is reduced.
  ZeroGrads(net);
  reducer->BeginBackward(false);
  Backward(net, rank, 0, 1);
  const auto local_b = net->b->weight.grad().clone();
  reducer->ReduceGradients({net->a->weight, net->a->bias});
  std::vector<bool> only_a(p.size(), false);
  for (std::size_t i = 0; i < p.size(); ++i) only_a[i] = p[i].is_same(net->a->weight) || p[i].is_same(net->a->bias);
  CheckGradients(check, net, ExpectedGradients(world, 1), "fallback subset:", only_a);
  check.Expect(torch::equal(net->b->weight.grad(), local_b), "fallback leaves other gradients alone");

  // Armed hooks but a subset passed: everything hooked is reduced, consistently on all ranks.
  ZeroGrads(net);
  reducer->BeginBackward(true);
  Backward(net, rank, 0, 1);
  reducer->ReduceGradients({net->b->weight});
  CheckGradients(check, net, ExpectedGradients(world, 1), "armed subset:", all);

  // Trained parameters stay identical on all ranks: compare a checksum through the reducer.
  {
    torch::NoGradGuard no_grad;
    for (auto& t : net->parameters()) {
      if (t.grad().defined()) t.sub_(0.1 * t.grad());
    }
  }
  double checksum = 0;
  for (const auto& t : net->parameters()) checksum += t.sum().item<double>();
  const auto total = reducer->AllReduceSum({checksum});
  check.Expect(std::abs(total[0] - world * checksum) < 1e-9, "identical parameters after a step");

  group->StoreBarrier("end");
  // A reducer that outlives its group fails clearly.
  const bool failed = check.failures() > 0;
  group.reset();
  try {
    reducer->AllReduceSum({1.0});
    check.Expect(false, "the reducer still works after its group ended");
  } catch (const std::logic_error&) {
  }
  if (failed || check.failures() > 0) return 1;
  std::cout << "OK" << std::endl;
  return 0;
}

// ---- syncbn --------------------------------------------------------------------------------------

// max |a − b| over max(max |b|, floor).
double Deviation(const torch::Tensor& a, const torch::Tensor& b, double floor = 0) {
  const double scale = std::max(b.abs().max().item<double>(), floor);
  return (a - b).abs().max().item<double>() / std::max(scale, 1e-300);
}

// One network: this rank's rows of a minibatch of 4·world examples with SyncBatchNorm, gradients
// averaged by the reducer's hooks, against the whole minibatch in one process without a group.
void CheckSyncBatchNorm(Checker& check, const std::string& what,
                        const std::function<std::shared_ptr<asv::nnet::SpeakerNet>()>& make,
                        const std::vector<std::int64_t>& input_shape, asv::train::GradientReducer& reducer,
                        const std::shared_ptr<asv::nnet::CrossRankSum>& sync) {
  const int rank = reducer.rank();
  const int world = reducer.world_size();
  const std::int64_t share = input_shape[0] / world;
  torch::manual_seed(7);
  auto net = make();
  torch::manual_seed(7);
  auto single = make();
  net->to(torch::kFloat64);
  single->to(torch::kFloat64);
  reducer.SyncModel(*net);
  torch::manual_seed(100);
  const auto x = torch::randn(input_shape, torch::kFloat64);
  const auto labels = torch::randint(5, {input_shape[0]}, torch::kInt64);
  const auto g = torch::randn({input_shape[0], 5}, torch::kFloat64);

  single->train();
  const auto expected = single->Logits(x, labels);
  (expected * g).sum().backward();

  net->train();
  torch::Tensor logits;
  {
    const asv::nnet::SyncBatchNormScope scope(sync);
    logits = net->Logits(x.narrow(0, rank * share, share), labels.narrow(0, rank * share, share));
  }
  reducer.BeginBackward(true);
  (logits * g.narrow(0, rank * share, share)).sum().backward();
  reducer.ReduceGradients(net->parameters());

  check.Expect(Deviation(logits, expected.narrow(0, rank * share, share)) < 1e-9, what + ": logits");
  const auto ours = net->named_parameters();
  const auto theirs = single->named_parameters();
  double largest = 0;
  for (const auto& p : theirs) largest = std::max(largest, p.value().grad().abs().max().item<double>());
  for (const auto& p : theirs) {
    // The reducer averages: the sum over ranks is world times that. Biases right before a batch
    // norm have gradient 0 up to rounding: at least 1e-6 of the largest gradient as the scale;
    // the small gradients of the squeeze-excitation biases (whose batch norm follows a leaky
    // ReLU) lose a few more digits to cancellation than the others: 1e-8.
    const auto& ours_grad = ours[p.key()].grad();
    const double deviation = ours_grad.defined() ? Deviation(ours_grad * world, p.value().grad(), 1e-6 * largest) : 1.0;
    check.Expect(deviation < 1e-8, fmt::format("{}: gradient of {} deviates by {:g} of its scale (largest {:g})", what,
                                               p.key(), deviation, largest));
  }
  const auto buffers = single->named_buffers();
  for (const auto& b : net->named_buffers()) {
    const auto& want = buffers[b.key()];
    check.Expect(want.is_floating_point() ? Deviation(b.value(), want) < 1e-9 : torch::equal(b.value(), want),
                 what + ": buffer " + b.key());
  }
}

int SyncBatchNormMode(const Args& args, std::shared_ptr<ProcessGroup>& group) {
  group = ProcessGroup::Create(Options(args));
  auto reducer = group->reducer();
  const auto sync = asv::train::MakeBatchNormSync(reducer);
  const std::int64_t batch = 4 * group->world_size();
  Checker check;
  asv::nnet::MarginHeadOptions softmax;
  softmax.type = asv::nnet::HeadType::kSoftmax;
  CheckSyncBatchNorm(
      check, "ResNet34", [&] { return asv::nnet::MakeMarginNet("ResNet34", 16, 8, 5, softmax, /*channels=*/4).ptr(); },
      {batch, 24, 16}, *reducer, sync);
  asv::nnet::XvectorNetOptions o;
  o.architecture = asv::nnet::Architecture::kStandardResSeNet;
  o.feat_dim = 6;
  o.n_speakers = 5;
  o.frame_layer_size = 16;
  o.stat_size = 12;
  o.embedding_size = 8;
  o.ser = 4;
  CheckSyncBatchNorm(
      check, "StandardResSeNet", [&] { return asv::nnet::XvectorNet(o).ptr(); }, {batch, 6, 15}, *reducer, sync);
  group->StoreBarrier("end");
  if (check.failures() > 0) return 1;
  std::cout << "OK" << std::endl;
  return 0;
}

// ---- train ---------------------------------------------------------------------------------------

// trainer_test.cc's small StandardNet on 8 Gaussian-blob speakers (8 x 16 clips per epoch).
asv::train::TrainerOptions TrainOptions(const Args& a) {
  asv::train::TrainerOptions o = asv::train::testing::SmallTrainerOptions();
  auto& n = o.network;
  n.minibatch_size = a.Int("minibatch", 16);
  n.optimizer_step_interval = a.Int("interval", 1);
  n.max_epochs = a.Int("epochs", 1);
  n.max_consecutive_lr_updates = a.Int("max_lr_updates", 2);
  n.resume_epoch = a.Int("resume", 0);
  n.sync_batch_norm = a.Int("sync_bn", 0) != 0;
  o.dataloader_workers = 0;
  const auto folder = a.Get("folder");
  if (!folder.empty()) o.checkpoint_folder = std::filesystem::path(folder) / "networks";
  o.seed = 11;
  return o;
}

void SaveParameters(const asv::train::Trainer& trainer, const std::string& path) {
  std::vector<torch::Tensor> params;
  for (const auto& p : trainer.net().parameters()) params.push_back(p.detach().clone());
  torch::save(params, path);
}

void SaveBuffers(const asv::train::Trainer& trainer, const std::string& path) {
  std::vector<torch::Tensor> buffers;
  for (const auto& b : trainer.net().buffers()) buffers.push_back(b.detach().clone());
  torch::save(buffers, path);
}

int Train(const Args& args, const std::shared_ptr<ProcessGroup>& group) {
  const int rank = group ? group->rank() : 0;
  const auto out = args.Get("out");
  asv::train::Trainer trainer(TrainOptions(args), asv::train::testing::MakeSyntheticData({}),
                              group ? group->reducer() : nullptr);
  trainer.Start();
  if (!out.empty()) SaveParameters(trainer, out + ".start." + std::to_string(rank) + ".pt");
  std::cout << "training" << std::endl;
  const auto result = trainer.Train();
  if (!out.empty()) {
    SaveParameters(trainer, out + "." + std::to_string(rank) + ".pt");
    SaveBuffers(trainer, out + ".buffers." + std::to_string(rank) + ".pt");
  }
  // The epochs as the trainer reports them (combined over the ranks), at full precision.
  for (const auto& e : result.epochs) {
    std::cout << fmt::format("epoch {} batches {} clips {} frames {} loss {:.17g} accuracy {:.17g}\n", e.epoch,
                             e.batches, e.clips, e.frames, e.loss, e.accuracy);
  }
  std::cout << "trained to epoch " << result.last_epoch << std::endl;
  return 0;
}

void Idle(int seconds) {
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
}

int Run(const Args& args, std::shared_ptr<ProcessGroup>& group) {
  if (args.mode == "collectives") return Collectives(args, group);
  if (args.mode == "syncbn") return SyncBatchNormMode(args, group);
  if (args.mode == "train") {
    if (args.Int("world", 1) > 1) group = ProcessGroup::Create(Options(args));
    return Train(args, group);
  }
  group = ProcessGroup::Create(Options(args));
  if (args.mode == "fail" || args.mode == "fail-wait") {
    if (args.mode == "fail-wait" && group->rank() == 0) {
      group->SetPeerFailureHandler([](int rank, const std::string& message) {
        std::cout << "handler: rank " << rank << ": " << message << std::endl;
      });
    }
    group->StoreBarrier("ready");
    if (group->rank() == 1) {
      group->ReportError("synthetic failure in rank 1");
      return 1;
    }
    if (args.mode == "fail") {
      Idle(30);
      std::cout << "the failure of rank 1 went unnoticed" << std::endl;
      return 0;
    }
    try {
      group->WaitFor("never");
    } catch (const std::runtime_error& e) {
      std::cout << "WaitFor threw: " << e.what() << std::endl;
      Idle(1);  // the watchdog (poll_ms) calls the handler meanwhile, which must not end the process
      return 0;
    }
    return 1;
  }
  if (args.mode == "sequential") {
    // Three groups one after the other on the same store address (rank 0 hosting: a new store
    // on the same port each time), each with a barrier and a reduction.
    for (int i = 0; i < 3; ++i) {
      if (i > 0) group = ProcessGroup::Create(Options(args));
      group->StoreBarrier("start");
      const auto sum = group->reducer()->AllReduceSum({1.0});
      if (sum[0] != group->world_size()) throw std::runtime_error("wrong sum in group " + std::to_string(i));
      group.reset();
    }
    std::cout << "OK" << std::endl;
    return 0;
  }
  if (args.mode == "hang") {
    group->StoreBarrier("ready");
    std::cout << "ready" << std::endl;
    Idle(30);
    return 0;
  }
  throw std::runtime_error("unknown mode " + args.mode);
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  std::shared_ptr<ProcessGroup> group;
  try {
    const auto args = Parse(argc, argv);
    if (args.Get("log") == "debug") asv::log::SetLevel(asv::log::Debug);
    return Run(args, group);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << std::endl;
    if (group) group->ReportError(e.what());
    return 1;
  }
}
