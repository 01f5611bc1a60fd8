// asv_bench_train: training throughput (frames/s) of the trainer's step for 1 and for N
// data-parallel processes, with speed-up and scaling efficiency: an x-vector network
// (--architecture) or, with --model, one of WeSpeaker's embedding models with an AAM-softmax head
// (voxceleb/margin's networks). Usage: --help and README.md.
//
// The launcher (this program without --worker-result) starts, for each world size N of --nproc,
// N copies of itself as workers through distributed::Launcher, hosting the rendezvous store as asvrun
// does (tools/asvrun/job.cc). Each worker builds the network with nnet::MakeXvectorNet, trains on
// random minibatches with the trainer's own step (train::TrainStep; data loading excluded)
// and times `steps` steps, `repeats` times. Rank 0 writes the timings to a JSON file that the
// launcher reads back. A world of one is a launched worker with train::NoOpReducer: exactly how
// asvrun trains without data parallelism. Like asvrun, it bounds oneDNN's primitive cache to
// 128 primitives unless ONEDNN_PRIMITIVE_CACHE_CAPACITY is set (asvcpp/train/onednn_cache.h).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sched.h>
#include <sys/resource.h>
#include <torch/cuda.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/compat/torch_compat.h"
#include "asvcpp/distributed/gpu_selection.h"
#include "asvcpp/distributed/launcher.h"
#include "asvcpp/distributed/process_group.h"
#include "asvcpp/distributed/runtime_info.h"
#include "asvcpp/distributed/world.h"
#include "asvcpp/nnet/speaker_net.h"
#include "asvcpp/nnet/xvector_net.h"
#include "asvcpp/settings/settings.h"
#include "asvcpp/train/gradient_reducer.h"
#include "asvcpp/train/cpu_allocator.h"
#include "asvcpp/train/onednn_cache.h"
#include "asvcpp/train/precision.h"
#include "asvcpp/train/sgd.h"
#include "asvcpp/train/step_readings.h"
#include "asvcpp/train/train_step.h"
#include "tools/bench/bench_util.h"

namespace {

using asv::ConfigError;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

// Host memory for the random minibatches of one worker.
constexpr std::int64_t kMaxPoolBytes = std::int64_t{512} << 20;

constexpr const char* kExamples = R"EX(
Examples:
  asv_bench_train --quick --nproc 1,2                   smoke test (tiny network, 2 steps)
  asv_bench_train --nproc 1,2,4 --json cpu.json         StandardNet on the CPU, 1, 2 and 4 Gloo processes
  asv_bench_train --device cuda --nproc 1,2,4,8         one process per GPU (NCCL), GPUs 0..N-1
  asv_bench_train --device cuda --nproc 1 --steps 50    the single-GPU training step
The table goes to stdout, progress to stderr. frames/s = N x per-process batch x frames x steps /
time of the slowest process; efficiency = frames/s(N) / (N x frames/s(1)).)EX";

struct BenchOptions {
  std::vector<int> nproc{1, 2};
  std::string device = "cpu";
  std::vector<int> gpus;  // physical GPU ids; empty: 0..N-1
  std::string architecture = "StandardNet";
  std::string model;  // set: nnet::MakeMarginNet's model with an AAM-softmax head, Nesterov SGD
  int batch = 64;
  int frames = 200;
  int speakers = 1000;
  int feat_dim = 30;
  int frame_layer = 512;
  int stat_size = 1500;
  int embedding = 512;
  int warmup = 3;
  int steps = 20;
  int repeats = 3;
  int threads = 0;  // 0: cores / N
  std::string precision = "fp32";
  std::string tf32 = "on";  // computing.allow_tf32's default
  std::string cpu_allocator = "caching";  // what train::Trainer uses (cpu_allocator.h)
  std::uint64_t seed = 1;
  std::string json;
  bool quick = false;
  std::string worker_result;  // set: this process is a worker
};

// ---------------------------------------------------------------------------------------------
// Machine description

int AvailableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    if (key == "model name" || key == "Hardware" || key == "cpu model") {
      return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
  return "unknown CPU";
}

std::string Now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buffer[64];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%d %H:%M:%S %Z", &tm);
  return buffer;
}

// CPU time of this process, all threads (user + system), in seconds. With one intra-op thread,
// frames per CPU second does not depend on how many other jobs share the cores.
double ProcessCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// ---------------------------------------------------------------------------------------------
// Worker

void Synchronize(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

asv::settings::NetworkSettings NetworkFor(const BenchOptions& o) {
  asv::settings::NetworkSettings ns;
  ns.network_class = asv::settings::kAsvtorchArchitecturePrefix + o.architecture;
  ns.frame_layer_size = o.frame_layer;
  ns.stat_size = o.stat_size;
  ns.embedding_size = o.embedding;
  ns.minibatch_size = o.batch;
  return ns;
}

int RunWorker(const BenchOptions& o) {
  const auto world = asv::distributed::WorldFromEnvironment(asv::distributed::CurrentEnvironment());
  asv::log::SetRank(world.rank, world.world_size);
  asv::distributed::SetIntraOpThreads(o.threads);
  asv::train::ApplyMathModes(o.tf32 == "on");
  const auto precision = asv::EnumFromName<asv::train::Precision>(o.precision).value();  // checked by CLI11
  // The launcher pinned this process to one GPU (CUDA_VISIBLE_DEVICES), so it is always cuda:0.
  const std::string device_name = o.device == "cuda" ? "cuda:0" : "cpu";
  if (o.device == "cuda" && !torch::cuda::is_available()) {
    throw ConfigError(fmt::format("rank {}: --device cuda but no GPU is usable (CUDA_VISIBLE_DEVICES={})", world.rank,
                                  std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "unset"));
  }
  const torch::Device device(device_name);

  std::shared_ptr<asv::distributed::ProcessGroup> group;
  std::shared_ptr<asv::train::GradientReducer> reducer;
  if (world.world_size > 1) {
    asv::distributed::ProcessGroupOptions group_options;
    group_options.world = world;
    group_options.device = device_name;
    group = asv::distributed::ProcessGroup::Create(group_options);
    reducer = group->reducer();
  } else {
    reducer = std::make_shared<asv::train::NoOpReducer>();
  }

  try {
    std::optional<asv::train::CachingCpuAllocatorScope> cpu_allocator;
    if (o.cpu_allocator == "caching") cpu_allocator.emplace();
    const auto ns = NetworkFor(o);
    torch::manual_seed(o.seed);
    std::shared_ptr<asv::nnet::SpeakerNet> net;
    std::vector<std::string> skiplist(ns.weight_decay_skiplist.begin(), ns.weight_decay_skiplist.end());
    double momentum = ns.momentum;
    double weight_decay = ns.weight_decay;
    if (o.model.empty()) {
      net = asv::nnet::MakeXvectorNet(ns, o.feat_dim, o.speakers).ptr();
    } else {
      // voxceleb/margin's step (WeSpeaker's conf/resnet.yaml, ecapa_tdnn.yaml): AAM-softmax
      // (s = 32, margin 0.2), SGD with Nesterov momentum 0.9 and weight decay 1e-4 on every
      // parameter.
      asv::nnet::MarginHeadOptions head;
      head.type = asv::nnet::HeadType::kArcMargin;
      head.scale = 32;
      head.margin = 0.2;
      net = asv::nnet::MakeMarginNet(o.model, o.feat_dim, o.embedding, o.speakers, head).ptr();
      skiplist.clear();
      momentum = 0.9;
      weight_decay = 1e-4;
    }
    net->to(device);
    reducer->SyncModel(*net);
    asv::train::Sgd optimizer(asv::train::WeightDecayGroups(*net, skiplist, ns.initial_learning_rate, weight_decay),
                              momentum, /*nesterov=*/!o.model.empty());

    // Random minibatches, different on each rank, made before the clock starts and kept on the
    // host as the trainer's are. Every step gets a new one (up to kMaxPoolBytes of them, then
    // they repeat): one batch trained on over and over drives the loss and the gradients towards
    // zero, and denormal arithmetic would then time something no real training does.
    const std::int64_t local_batch = o.batch / world.world_size;
    const std::int64_t batch_bytes = local_batch * o.feat_dim * o.frames * 4;
    const std::int64_t total_steps = o.warmup + static_cast<std::int64_t>(o.steps) * o.repeats;
    const std::int64_t pool_size = std::max<std::int64_t>(1, std::min(total_steps, kMaxPoolBytes / batch_bytes));
    torch::manual_seed(o.seed + 1 + static_cast<std::uint64_t>(world.rank));
    std::vector<torch::Tensor> host_features, host_labels;
    for (std::int64_t b = 0; b < pool_size; ++b) {
      host_features.push_back(torch::randn({local_batch, o.feat_dim, o.frames}, torch::kFloat32));
      host_labels.push_back(torch::randint(o.speakers, {local_batch}, torch::kInt64));
    }

    // The trainer's own step (train::TrainStep), one minibatch per optimizer step
    // (optimizer_step_interval 1).
    net->train();
    optimizer.ZeroGrad();
    asv::train::TrainStep train_step(net, optimizer, reducer, device_name, precision);
    double last_loss = 0;
    const auto read_steps = [&] {
      for (const auto& r : train_step.readings().Read()) {
        last_loss = r.loss;
        if (!std::isfinite(last_loss)) {
          throw asv::StageError(
              fmt::format("training diverged: loss is {}; timing it would measure NaN arithmetic", last_loss));
        }
      }
    };
    std::size_t next_batch = 0;
    auto step = [&]() {
      const std::size_t b = next_batch;
      next_batch = (next_batch + 1) % host_features.size();
      // The trainer's loss and accuracy readings, read every few steps as it does.
      if (train_step.Run(host_features[b], host_labels[b], 1, true)) read_steps();
    };

    for (int i = 0; i < o.warmup; ++i) step();
    read_steps();
    Json repeats = Json::array();
    std::vector<double> rates;
    for (int r = 0; r < o.repeats; ++r) {
      Synchronize(device);
      // A collective, not reducer->Barrier(): the store-based barrier releases ranks up to one
      // poll interval apart, which would show up in the slowest rank's time.
      (void)reducer->AllReduceSum({0.0});
      const auto memory_start = asv::train::GetCpuAllocatorStats();
      const auto start = Clock::now();
      const double cpu_start = ProcessCpuSeconds();
      for (int i = 0; i < o.steps; ++i) step();
      read_steps();  // the last readings, inside the timed steps
      Synchronize(device);
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      const double cpu_seconds = ProcessCpuSeconds() - cpu_start;
      std::vector<double> mine(static_cast<std::size_t>(world.world_size), 0.0);
      mine[static_cast<std::size_t>(world.rank)] = seconds;
      const auto all = reducer->AllReduceSum(mine);
      const double slowest = *std::max_element(all.begin(), all.end());
      const double frames =
          static_cast<double>(world.world_size) * static_cast<double>(local_batch) * o.frames * o.steps;
      const double rate = slowest > 0 ? frames / slowest : 0;
      rates.push_back(rate);
      repeats.push_back({{"frames_per_s", rate},
                         {"slowest_rank_seconds", slowest},
                         {"rank_seconds", all},
                         {"rank0_cpu_seconds", cpu_seconds},
                         {"rank0_frames_per_cpu_s", cpu_seconds > 0 ? frames / world.world_size / cpu_seconds : 0},
                         // New blocks the caching allocator had to map during the timed steps.
                         {"rank0_cpu_blocks_mapped", asv::train::GetCpuAllocatorStats().maps - memory_start.maps}});
      ASV_LOG0(Info, "repeat {}/{}: {:.0f} frames/s, {:.1f} ms/step (slowest rank {:.3f} s, loss {:.3f})", r + 1,
               o.repeats, rate, 1000 * slowest / o.steps, slowest, last_loss);
    }

    if (world.rank == 0) {
      const auto runtime = asv::distributed::GetRuntimeInfo();
      Json out;
      out["parameters"] = asv::nnet::CountParameters(*net);
      out["per_process_batch"] = local_batch;
      out["distinct_batches"] = pool_size;
      out["intra_op_threads"] = runtime.intra_op_threads;
      out["device_name"] = device.is_cuda() && !runtime.gpus.empty() ? runtime.gpus.front().name : std::string("cpu");
      out["reducer"] = world.world_size > 1 ? (device.is_cuda() ? "NCCL process group" : "Gloo process group")
                                            : "train::NoOpReducer";
      out["final_loss"] = last_loss;
      const auto memory = asv::train::GetCpuAllocatorStats();
      out["cpu_allocator"] = {{"kind", o.cpu_allocator},
                              {"peak_in_use_mb", memory.peak_in_use_bytes >> 20},
                              {"cached_mb", memory.cached_bytes >> 20},
                              {"allocations", memory.allocations},
                              {"cache_hits", memory.cache_hits},
                              {"maps", memory.maps},
                              {"unmaps", memory.unmaps}};
      out["repeats"] = repeats;
      asv::fs::WriteFileAtomic(o.worker_result, out.dump(2) + "\n");
    }
    // Nobody leaves while a peer still needs it for a collective.
    (void)reducer->AllReduceSum({0.0});
  } catch (const std::exception& e) {
    if (group) group->ReportError(e.what());
    throw;
  }
  return asv::kExitOk;
}

// ---------------------------------------------------------------------------------------------
// Launcher

struct RunResult {
  int world_size = 0;
  int threads = 0;
  std::vector<std::string> visible;  // CUDA_VISIBLE_DEVICES per rank
  std::string status = "ok";         // "ok", "skipped: ...", "failed: ..."
  Json worker;                       // rank 0's report
  std::vector<double> rates;
  double median = 0;
};

std::vector<std::string> WorkerArgv(const BenchOptions& o, int threads, const std::filesystem::path& result) {
  const std::pair<const char*, std::string> options[] = {
      {"--device", o.device},
      {"--architecture", o.architecture},
      {"--model", o.model},
      {"--batch", std::to_string(o.batch)},
      {"--frames", std::to_string(o.frames)},
      {"--speakers", std::to_string(o.speakers)},
      {"--feat-dim", std::to_string(o.feat_dim)},
      {"--frame-layer", std::to_string(o.frame_layer)},
      {"--stat-size", std::to_string(o.stat_size)},
      {"--embedding", std::to_string(o.embedding)},
      {"--warmup", std::to_string(o.warmup)},
      {"--steps", std::to_string(o.steps)},
      {"--repeats", std::to_string(o.repeats)},
      {"--threads", std::to_string(threads)},
      {"--precision", o.precision},
      {"--tf32", o.tf32},
      {"--cpu-allocator", o.cpu_allocator},
      {"--seed", std::to_string(o.seed)},
      {"--worker-result", result.string()},
  };
  std::vector<std::string> argv = {asv::fs::SelfExecutable().string()};
  for (const auto& [name, value] : options) {
    if (value.empty()) continue;  // --model unset
    argv.push_back(name);
    argv.push_back(value);
  }
  return argv;
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "asv_bench_train.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error(fmt::format("cannot create a temporary folder {}", pattern));
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

RunResult RunWorld(const BenchOptions& o, int n, const asv::distributed::RuntimeInfo& runtime, int cores,
                   const TempDir& temp) {
  RunResult r;
  r.world_size = n;
  r.threads = o.threads > 0 ? o.threads : std::max(1, cores / n);
  const bool cuda = o.device == "cuda";
  if (o.batch / n < 2) {
    // The embedding layer's batch norm needs two clips per process in training mode.
    r.status = fmt::format("skipped: --batch {} leaves fewer than 2 clips for each of {} processes", o.batch, n);
    return r;
  }
  if (!cuda && n > 1 && !runtime.gloo_build) {
    r.status =
        fmt::format("skipped: {} CPU processes need Gloo, which this LibTorch ({}) lacks", n, runtime.torch_version);
    return r;
  }
  if (cuda) {
    std::vector<int> ids = o.gpus;
    if (ids.empty()) {
      for (int i = 0; i < n; ++i) ids.push_back(i);
    } else if (static_cast<int>(ids.size()) < n) {
      r.status = fmt::format("skipped: --gpus names {} GPUs, {} processes need as many", ids.size(), n);
      return r;
    }
    ids.resize(static_cast<std::size_t>(n));
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    try {
      r.visible = asv::distributed::WorkerVisibleDevices(
          ids, visible ? std::optional<std::string>(visible) : std::nullopt, static_cast<int>(runtime.gpus.size()));
    } catch (const ConfigError& e) {
      r.status = fmt::format("skipped: {} GPUs needed, {} visible ({})", n, runtime.gpus.size(), e.what());
      return r;
    }
  }
  if (o.batch % n != 0) {
    ASV_LOG(Warning, "--batch {} is not divisible by {}: {} clips per process, global batch {}", o.batch, n,
            o.batch / n, (o.batch / n) * n);
  }

  const auto result_file = temp.path() / fmt::format("world{}.json", n);
  asv::distributed::StoreServer store(0);
  std::vector<asv::distributed::WorkerSpec> workers;
  for (int rank = 0; rank < n; ++rank) {
    asv::distributed::WorkerSpec w;
    w.rank = rank;
    w.argv = WorkerArgv(o, r.threads, result_file);
    asv::distributed::WorldInfo world;
    world.rank = rank;
    world.world_size = n;
    world.local_rank = rank;
    world.local_world_size = n;
    world.master_port = store.port();
    w.env = asv::distributed::AsvrunWorkerEnvironment(world);
    // OpenMP's pool must not start with every core before set_num_threads runs.
    w.env["OMP_NUM_THREADS"] = std::to_string(r.threads);
    if (cuda) {
      w.env["CUDA_VISIBLE_DEVICES"] = r.visible[static_cast<std::size_t>(rank)];
      w.env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
    }
    w.unset_env = asv::distributed::kWorkerUnsetEnvironment;
    workers.push_back(std::move(w));
  }

  ASV_LOG(Info, "{} process{} on {}, {} intra-op thread{} each{}", n, n > 1 ? "es" : "", o.device, r.threads,
          r.threads > 1 ? "s" : "", cuda ? fmt::format(" (CUDA_VISIBLE_DEVICES {})", fmt::join(r.visible, " | ")) : "");
  asv::distributed::Launcher launcher;
  launcher.Start(workers);
  const auto launched = launcher.Wait();
  if (!launched.ok()) {
    const auto& failure = *launched.first_failure;
    std::string message = failure.Describe();
    if (auto reported = store.Get(fmt::format("asvcpp/error/{}", failure.rank))) message += ": " + *reported;
    r.status = "failed: " + message;
    return r;
  }
  r.worker = Json::parse(asv::fs::ReadFile(result_file));
  for (const auto& rep : r.worker["repeats"]) r.rates.push_back(rep["frames_per_s"].get<double>());
  r.median = Median(r.rates);
  return r;
}

std::string Thousands(double x) {
  auto digits = fmt::format("{:.0f}", x);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<std::size_t>(i), ",");
  return digits;
}

int RunLauncher(const BenchOptions& o, const std::string& command_line) {
  const auto runtime = asv::distributed::GetRuntimeInfo();
  if (o.device == "cuda" && !runtime.cuda_available) {
    throw ConfigError(fmt::format(
        "--device cuda: {}", runtime.cuda_build ? "no GPU is usable on this machine" : "this LibTorch is a CPU build"));
  }
  const int cores = AvailableCores();
  const TempDir temp;
  std::vector<RunResult> results;
  for (int n : o.nproc) results.push_back(RunWorld(o, n, runtime, cores, temp));

  const RunResult* single = nullptr;
  for (const auto& r : results) {
    if (r.world_size == 1 && r.status == "ok") single = &r;
  }
  auto speedup = [&](const RunResult& r) -> std::optional<double> {
    if (!single || r.status != "ok" || single->median <= 0) return std::nullopt;
    return r.median / single->median;
  };

  // The machine and what was measured.
  std::string gpus;
  if (o.device == "cuda") {
    std::vector<std::string> names;
    for (const auto& g : runtime.gpus) {
      names.push_back(fmt::format("{} ({:.0f} GiB)", g.name, static_cast<double>(g.total_memory_bytes) / (1 << 30)));
    }
    gpus = fmt::format("{}", fmt::join(names, ", "));
  }
  const std::string cpu = CpuModel();
  const auto hardware_threads = std::thread::hardware_concurrency();
  const std::string torch_version = asv::compat::TorchVersion();
  std::int64_t parameters = 0;
  for (const auto& r : results) {
    if (r.status == "ok") parameters = r.worker["parameters"].get<std::int64_t>();
  }
  const std::string single_mode =
      "1 process: a launched worker with train::NoOpReducer (as asvrun trains without data parallelism); "
      "N > 1: distributed::ProcessGroup's bucketed all-reduce (Gloo on the CPU, NCCL on GPUs)";

  const std::string network_name = o.model.empty() ? o.architecture : o.model;
  std::cout << fmt::format("## Training throughput: {} ({})\n\n", network_name, o.device);
  std::cout << fmt::format("- date: {}\n", Now());
  std::cout << fmt::format("- machine: {}, {} cores available ({} hardware threads){}\n", cpu, cores, hardware_threads,
                           gpus.empty() ? "" : "; GPUs: " + gpus);
  std::cout << fmt::format("- LibTorch {} (CUDA build {}, NCCL {}, Gloo {})\n", torch_version,
                           runtime.cuda_build ? "yes" : "no", runtime.nccl_build ? "yes" : "no",
                           runtime.gloo_build ? "yes" : "no");
  if (o.model.empty()) {
    std::cout << fmt::format(
        "- network: {}, {}-dim input, frame layer {}, stats {}, embedding {}, {} speakers ({} parameters)\n",
        o.architecture, o.feat_dim, o.frame_layer, o.stat_size, o.embedding, o.speakers,
        parameters > 0 ? Thousands(static_cast<double>(parameters)) : "?");
  } else {
    std::cout << fmt::format(
        "- network: {} (WeSpeaker), {}-dim input, embedding {}, AAM-softmax over {} classes ({} parameters); "
        "SGD with Nesterov momentum 0.9, weight decay 1e-4\n",
        o.model, o.feat_dim, o.embedding, o.speakers,
        parameters > 0 ? Thousands(static_cast<double>(parameters)) : "?");
  }
  std::cout << fmt::format(
      "- step: forward + cross-entropy + backward + gradient all-reduce + SGD (train::Trainer's loop, "
      "data loading excluded); global minibatch {} x {} frames, {}{}; {} CPU allocator; {} warm-up + {} timed steps, "
      "{} repeat{}\n",
      o.batch, o.frames, o.precision, o.device == "cuda" ? fmt::format(" (TF32 {})", o.tf32) : "", o.cpu_allocator,
      o.warmup, o.steps, o.repeats, o.repeats > 1 ? "s" : "");
  std::cout << fmt::format("- {}\n", single_mode);
  std::cout << "- frames/s = N x per-process batch x frames x steps / time of the slowest process; "
               "efficiency = frames/s(N) / (N x frames/s(1))\n";
  std::cout << fmt::format("- command: {}\n\n", command_line);
  std::cout << "| processes | device | threads/process | batch/process | frames/s (median) | min - max | "
               "ms/step | speed-up | efficiency |\n";
  std::cout << "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : results) {
    if (r.status != "ok") {
      std::cout << fmt::format("| {} | {} | {} | | {} | | | | |\n", r.world_size, o.device, r.threads, r.status);
      continue;
    }
    const auto [lo, hi] = std::minmax_element(r.rates.begin(), r.rates.end());
    const auto s = speedup(r);
    const double frames_per_step =
        static_cast<double>(r.worker["per_process_batch"].get<std::int64_t>()) * r.world_size * o.frames;
    std::cout << fmt::format("| {} | {} | {} | {} | {} | {} - {} | {:.1f} | {} | {} |\n", r.world_size,
                             o.device == "cuda" ? r.worker["device_name"].get<std::string>() : "cpu", r.threads,
                             r.worker["per_process_batch"].get<std::int64_t>(), Thousands(r.median), Thousands(*lo),
                             Thousands(*hi), 1000 * frames_per_step / r.median, s ? fmt::format("{:.2f}", *s) : "-",
                             s ? fmt::format("{:.2f}", *s / r.world_size) : "-");
  }
  std::cout.flush();

  bool all_ok = true;
  Json runs = Json::array();
  for (const auto& r : results) {
    Json j;
    j["world_size"] = r.world_size;
    j["device"] = o.device;
    j["threads_per_process"] = r.threads;
    j["status"] = r.status;
    if (r.status.rfind("failed", 0) == 0) all_ok = false;
    if (r.status == "ok") {
      const auto [lo, hi] = std::minmax_element(r.rates.begin(), r.rates.end());
      const auto s = speedup(r);
      j["device_name"] = r.worker["device_name"];
      j["reducer"] = r.worker["reducer"];
      j["per_process_batch"] = r.worker["per_process_batch"];
      j["frames_per_s_median"] = r.median;
      j["frames_per_s_min"] = *lo;
      j["frames_per_s_max"] = *hi;
      j["speedup"] = s ? Json(*s) : Json(nullptr);
      j["efficiency"] = s ? Json(*s / r.world_size) : Json(nullptr);
      j["final_loss"] = r.worker["final_loss"];
      j["repeats"] = r.worker["repeats"];
      if (!r.visible.empty()) j["cuda_visible_devices"] = r.visible;
    }
    runs.push_back(j);
  }
  if (!o.json.empty()) {
    Json out;
    out["benchmark"] = "asv_bench_train";
    out["date"] = Now();
    out["command"] = command_line;
    out["machine"] = {
        {"cpu", cpu}, {"cores_available", cores}, {"hardware_threads", hardware_threads}, {"gpus", Json::array()}};
    for (const auto& g : runtime.gpus) {
      out["machine"]["gpus"].push_back({{"name", g.name}, {"memory_bytes", g.total_memory_bytes}});
    }
    out["libtorch"] = {{"version", torch_version},
                       {"cuda_build", runtime.cuda_build},
                       {"nccl", runtime.nccl_build},
                       {"gloo", runtime.gloo_build}};
    out["workload"] = {{"architecture", network_name},
                       {"feat_dim", o.feat_dim},
                       {"frame_layer", o.frame_layer},
                       {"stat_size", o.stat_size},
                       {"embedding", o.embedding},
                       {"speakers", o.speakers},
                       {"parameters", parameters},
                       {"global_batch", o.batch},
                       {"frames", o.frames},
                       {"warmup", o.warmup},
                       {"steps", o.steps},
                       {"repeats", o.repeats},
                       {"precision", o.precision},
                       {"tf32", o.tf32},
                       {"cpu_allocator", o.cpu_allocator},
                       {"seed", o.seed}};
    out["single_process_mode"] = single_mode;
    out["runs"] = runs;
    asv::fs::WriteFileAtomic(o.json, out.dump(2) + "\n");
    ASV_LOG(Info, "wrote {}", o.json);
  }
  return all_ok ? asv::kExitOk : asv::kExitFailure;
}

std::string JoinCommandLine(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) out += (i > 0 ? " " : "") + std::string(argv[i]);
  return out;
}

int Main(int argc, char** argv) {
  BenchOptions o;
  CLI::App app{"asv_bench_train: x-vector training throughput (frames/s) for 1 and N data-parallel processes",
               "asv_bench_train"};
  app.footer(kExamples);
  app.add_option("--nproc", o.nproc, "World sizes to run in turn, e.g. 1,2,4")
      ->delimiter(',')
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--device", o.device, "cpu (Gloo) or cuda (NCCL, one GPU per process)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  app.add_option("--gpus", o.gpus, "Physical GPU ids for --device cuda, e.g. 0,1,2,3 (default: 0..N-1)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--model", o.model,
                 "WeSpeaker embedding model with an AAM-softmax head instead of an x-vector network: ResNet34, "
                 "ECAPA_TDNN_GLOB_c512, ... (defaults then: 80 bins, embedding 256 or 192, 5994 x 3 classes, "
                 "batch 128)")
      ->check(CLI::IsMember(asv::nnet::MarginNetModels()));
  app.add_option("--architecture", o.architecture, "Network (ASVtorch's class name)")
      ->check(CLI::IsMember({"StandardNet", "StandardSeNet", "StandardResSeNet", "LargeResSeNet"}))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Global minibatch (clips), split evenly over the processes")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--frames", o.frames, "Frames per clip")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--speakers", o.speakers, "Classifier outputs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--feat-dim", o.feat_dim, "Features per frame")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--frame-layer", o.frame_layer, "network.frame_layer_size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--stat-size", o.stat_size, "network.stat_size")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--embedding", o.embedding, "network.embedding_size")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", o.warmup, "Untimed steps first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--steps", o.steps, "Timed steps per repeat")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--repeats", o.repeats, "Timed repeats (median and spread are over these)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", o.threads, "Intra-op threads per process (default: available cores / N)")
      ->check(CLI::PositiveNumber);
  app.add_option("--precision", o.precision, "Forward pass and loss in fp32 or under bf16 autocast (network.precision)")
      ->check(CLI::IsMember(asv::EnumChoices<asv::train::Precision>()))
      ->capture_default_str();
  app.add_option("--tf32", o.tf32, "TF32 tensor cores for float32 on GPUs (computing.allow_tf32)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--cpu-allocator", o.cpu_allocator,
                 "LibTorch CPU allocator: caching (train::Trainer's, cpu_allocator.h) or default (malloc)")
      ->check(CLI::IsMember({"caching", "default"}))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the weights and the random minibatches")->capture_default_str();
  app.add_option("--json", o.json, "Also write the results as JSON to this file");
  app.add_flag("--quick", o.quick,
               "Smoke test: tiny network (32/64/32, 10 speakers), batch 8 x 40 frames, 1 warm-up + 2 steps, "
               "1 repeat (options given explicitly win)");
  app.add_option("--worker-result", o.worker_result, "Internal: run as a launched worker, rank 0 writes here")
      ->group("");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? asv::kExitOk : asv::kExitConfigError;
  }
  if (!o.worker_result.empty()) return RunWorker(o);

  if (!o.model.empty()) {
    // voxceleb/margin's workload: WeSpeaker's batch 128 x 200 frames x 80 fbank bins, VoxCeleb2
    // dev's 5,994 speakers x 3 speeds.
    auto margin_default = [&app](const char* name, int& field, int value) {
      if (app.count(name) == 0) field = value;
    };
    margin_default("--feat-dim", o.feat_dim, 80);
    margin_default("--embedding", o.embedding, o.model == "ResNet34" ? 256 : 192);
    margin_default("--speakers", o.speakers, 5994 * 3);
    margin_default("--batch", o.batch, 128);
  }

  if (o.quick) {
    auto tiny = [&app](const char* name, int& field, int value) {
      if (app.count(name) == 0) field = value;
    };
    tiny("--batch", o.batch, 8);
    tiny("--frames", o.frames, 40);
    tiny("--speakers", o.speakers, 10);
    tiny("--frame-layer", o.frame_layer, 32);
    tiny("--stat-size", o.stat_size, 64);
    tiny("--embedding", o.embedding, 32);
    tiny("--warmup", o.warmup, 1);
    tiny("--steps", o.steps, 2);
    tiny("--repeats", o.repeats, 1);
  }
  return RunLauncher(o, JoinCommandLine(argc, argv));
}

}  // namespace

int main(int argc, char** argv) {
  asv::train::BoundOneDnnPrimitiveCache();  // as asvrun; workers inherit them
  asv::train::BoundIdeepCache();
  return asv::bench::RunMain(Main, argc, argv);
}
