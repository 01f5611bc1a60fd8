// asv_bench_scoring: the cosine back end of a VoxCeleb1 evaluation at full size on synthetic
// embeddings: processing 'cwl', adaptive s-norm, quality-aware calibration and the metrics of
// Vox1-O, Vox1-E and Vox1-H (cleaned), the asvcpp side of the "scoring" case of run_benchmarks.py
// (peer: tools/bench/peers/backend_scoring.py).
//
// Data (deterministic, --seed), sizes of VoxCeleb1 by default:
//  * --utterances 153,516 trial-side embeddings of --speakers 1,251 speakers (utterance u belongs
//    to speaker u mod speakers), dimension --dim 256. Speaker means lie in a rank --speaker-rank
//    (128) subspace: m_s = sqrt(b) (a g_s + sqrt(1 - a^2) y_s) W with W [R, D] ~ N(0, 1/D),
//    y_s ~ N(0, I_R) and g_s shared by the --groups (40) speaker groups (nationality and gender of
//    Vox1-H; a = --group-share 0.5), b = --between-variance 1. An utterance is
//    x = offset + m_s + sqrt(6 / duration) e, e ~ N(0, I_D), duration ~ 8 exp(0.4 N(0, 1)) s
//    clamped to [4, 60]: short utterances are noisier (what quality-aware calibration models).
//    The offset (1.5 in every dimension) gives the raw magnitudes a spread and 'c' work to do.
//  * Trial lists of --list-sizes 37,611 / 579,818 / 550,894 trials (Vox1-O / E / H cleaned),
//    alternately target and non-target (half targets, as VoxCeleb's lists): O among the first 40
//    speakers (Vox1's test speakers), E among all, H non-targets within a speaker group.
//  * Cohort: --cohort 17,982 vectors (5,994 VoxCeleb2 speakers x 3 speeds, each a speaker mean):
//    m_s + e / sqrt(8) of other speakers (a mean of 8 utterances).
//  * Back-end set: --backend-vectors 20,000 utterances of 1,000 other speakers ('cwl' training).
//  * Calibration set: --calibration-trials 30,000 trials (half target) among 4,000 utterances of
//    200 held-out speakers.
// Steps, each timed once (wall-clock and process CPU seconds):
//   process         VectorProcessor::Train("cwl") on the back-end set, Process of the trial-side,
//                   cohort and calibration utterances
//   snorm_stats     ComputeAdaptiveSnormStats (cosine, top --top-n 300) of all 153,516 embeddings,
//                   once for the three lists
//   score           ScoreTrials of the three lists (cosine)
//   normalise       ApplySnorm of the three lists
//   calibration_train  s-norm stats, scores and AS-norm of the calibration trials, QualityFeatures
//                   (log durations, raw magnitudes) and TrainLinearCalibration
//   calibration_apply  QualityFeatures and ApplyAll for all trials
//   metrics         per list: EER, minDCF (p_target 0.05 and 0.01), Cllr, minCllr, actDCF (0.05,
//                   0.01) of the calibrated LLRs
// plus the total and the peak resident memory. --threads sets LibTorch's threads and OpenBLAS's.
// --write DIR writes the inputs (raw little-endian, row-major) and asvcpp's outputs for the peer.
#include <ATen/Parallel.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "asvcpp/backend/score_norm.h"
#include "asvcpp/backend/scorer.h"
#include "asvcpp/backend/scoring.h"
#include "asvcpp/backend/vector_processor.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/eval/calibration.h"
#include "asvcpp/eval/llr_metrics.h"
#include "asvcpp/eval/metrics.h"
#include "tools/bench/bench_util.h"

// OpenBLAS's thread setter, when the process has OpenBLAS (LibTorch's BLAS on Debian); null otherwise.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

namespace fs = std::filesystem;
using asv::Matrix;
using asv::backend::TrialIndex;

double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Wall-clock and CPU seconds of one call.
struct Step {
  double wall = 0;
  double cpu = 0;
  asv::bench::Json ToJson() const { return {{"wall_s", wall}, {"cpu_s", cpu}}; }
};

template <class Fn>
Step Time(Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu = CpuSeconds();
  fn();
  return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), CpuSeconds() - cpu};
}

struct Generator {
  std::mt19937_64 rng;
  std::int64_t dim;
  std::vector<double> w;  // [rank, dim]
  std::int64_t rank;

  Generator(std::uint64_t seed, std::int64_t dim_, std::int64_t rank_) : rng(seed), dim(dim_), rank(rank_) {
    std::normal_distribution<double> normal(0.0, 1.0);
    w.resize(static_cast<std::size_t>(rank * dim));
    for (double& v : w) v = normal(rng) / std::sqrt(static_cast<double>(dim));
  }

  // Speaker means [n, dim]: sqrt(b) (a g + sqrt(1 - a^2) y) W, g the row's group latent.
  Matrix Means(std::int64_t n, std::int64_t groups, double share, double between) {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> g(static_cast<std::size_t>(groups * rank));
    for (double& v : g) v = normal(rng);
    Matrix means(n, dim);
    std::vector<double> y(static_cast<std::size_t>(rank)), row(static_cast<std::size_t>(dim));
    for (std::int64_t s = 0; s < n; ++s) {
      const std::int64_t group = s % groups;
      for (std::int64_t k = 0; k < rank; ++k) {
        y[static_cast<std::size_t>(k)] =
            std::sqrt(between) * (share * g[static_cast<std::size_t>(group * rank + k)] +
                                  std::sqrt(1 - share * share) * normal(rng));
      }
      std::fill(row.begin(), row.end(), 0.0);
      for (std::int64_t k = 0; k < rank; ++k) {
        const double yk = y[static_cast<std::size_t>(k)];
        const double* wk = w.data() + k * dim;
        for (std::int64_t d = 0; d < dim; ++d) row[static_cast<std::size_t>(d)] += yk * wk[d];
      }
      for (std::int64_t d = 0; d < dim; ++d) means.row(s)[d] = static_cast<float>(row[static_cast<std::size_t>(d)]);
    }
    return means;
  }

  // Rows r of speaker first + r mod speakers: offset + mean + noise_scale(r) e.
  Matrix Utterances(const Matrix& means, std::int64_t first, std::int64_t speakers, std::int64_t rows,
                    const std::vector<double>& noise_scale) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Matrix out(rows, dim);
    for (std::int64_t r = 0; r < rows; ++r) {
      const float* m = means.row(first + r % speakers);
      const auto scale = static_cast<float>(noise_scale[static_cast<std::size_t>(r)]);
      float* o = out.row(r);
      for (std::int64_t d = 0; d < dim; ++d) o[d] = 1.5f + m[d] + scale * normal(rng);
    }
    return out;
  }

  std::vector<double> Durations(std::int64_t n) {
    std::normal_distribution<double> normal(0.0, 1.0);
    std::vector<double> d(static_cast<std::size_t>(n));
    for (double& v : d) v = std::clamp(8.0 * std::exp(0.4 * normal(rng)), 4.0, 60.0);
    return d;
  }
};

struct TrialSet {
  std::string name;
  std::vector<TrialIndex> trials;
  std::vector<std::uint8_t> target;
};

// `count` trials, alternately target and non-target, among utterances u < n_utt of speaker
// u mod n_spk, speakers drawn from [0, spk_limit); non-targets within a group when `in_group`.
TrialSet MakeTrials(std::mt19937_64& rng, std::string name, std::int64_t count, std::int64_t n_utt, std::int64_t n_spk,
                    std::int64_t spk_limit, bool in_group, std::int64_t groups) {
  TrialSet set;
  set.name = std::move(name);
  set.trials.resize(static_cast<std::size_t>(count));
  set.target.resize(static_cast<std::size_t>(count));
  const std::int64_t per_spk = n_utt / n_spk;  // utterances k * n_spk + s, k < per_spk
  auto utt = [&](std::int64_t spk) {
    return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(per_spk)) * n_spk + spk;
  };
  auto spk_of = [&]() { return static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(spk_limit)); };
  for (std::int64_t t = 0; t < count; ++t) {
    const bool target = t % 2 == 0;
    const std::int64_t a = spk_of();
    std::int64_t b = a;
    if (!target) {
      while (b == a) {
        b = spk_of();
        if (in_group) b = b - b % groups + a % groups;  // same group as a
        if (b >= spk_limit) b = a;
      }
    }
    std::int64_t ua = utt(a), ub = utt(b);
    while (ub == ua) ub = utt(b);
    set.trials[static_cast<std::size_t>(t)] = {ua, ub};
    set.target[static_cast<std::size_t>(t)] = target ? 1 : 0;
  }
  return set;
}

template <class T>
void WriteRaw(const fs::path& path, const T* data, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  if (!out) throw asv::DataError("cannot write " + path.string());
}

void WriteTrials(const fs::path& path, const std::vector<TrialIndex>& trials) {
  std::vector<std::int64_t> flat;
  flat.reserve(2 * trials.size());
  for (const TrialIndex& t : trials) flat.push_back(t.left), flat.push_back(t.right);
  WriteRaw(path, flat.data(), flat.size());
}

std::vector<double> Magnitudes(const Matrix& x) {
  std::vector<double> out(static_cast<std::size_t>(x.rows()));
  for (std::int64_t r = 0; r < x.rows(); ++r) {
    double s = 0;
    for (std::int64_t d = 0; d < x.cols(); ++d) s += static_cast<double>(x.row(r)[d]) * x.row(r)[d];
    out[static_cast<std::size_t>(r)] = std::sqrt(s);
  }
  return out;
}

// [n_trials, 5] quality features of scored trials.
std::vector<double> Features(const std::vector<float>& scores, const std::vector<TrialIndex>& trials,
                             const std::vector<double>& durations, const std::vector<double>& magnitudes) {
  std::vector<double> out;
  out.reserve(5 * trials.size());
  for (std::size_t t = 0; t < trials.size(); ++t) {
    const auto l = static_cast<std::size_t>(trials[t].left), r = static_cast<std::size_t>(trials[t].right);
    const std::vector<double> f =
        asv::eval::QualityFeatures(scores[t], {durations[l], magnitudes[l]}, {durations[r], magnitudes[r]});
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

int Main(int argc, char** argv) {
  std::int64_t utterances = 153516;
  std::int64_t speakers = 1251;
  std::int64_t dim = 256;
  std::int64_t speaker_rank = 128;
  std::int64_t groups = 40;
  double group_share = 0.5;
  double between_variance = 1.0;
  std::vector<std::int64_t> list_sizes = {37611, 579818, 550894};
  std::int64_t cohort_size = 17982;
  std::int64_t backend_vectors = 20000;
  std::int64_t calibration_trials = 30000;
  std::int64_t top_n = 300;
  int threads = 1;
  std::uint64_t seed = 1;
  std::string write_dir;
  std::string json_path = "-";
  CLI::App app{"asv_bench_scoring: cwl + cosine + adaptive s-norm + quality-aware calibration + metrics, Vox1-O/E/H size"};
  app.add_option("--utterances", utterances, "Trial-side embeddings")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--speakers", speakers, "Speakers of the trial side")->check(CLI::Range(40, 1 << 30))->capture_default_str();
  app.add_option("--dim", dim, "Embedding dimension D")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--speaker-rank", speaker_rank, "Rank R of the speaker subspace (<= D)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--groups", groups, "Speaker groups (Vox1-H non-targets stay within one)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--group-share", group_share, "Share a of the group latent in a speaker's mean")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--between-variance", between_variance, "Between-speaker variance b (within: 6 / duration)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--list-sizes", list_sizes, "Trials of Vox1-O, Vox1-E, Vox1-H")->expected(3)->capture_default_str();
  app.add_option("--cohort", cohort_size, "Cohort vectors")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--backend-vectors", backend_vectors, "Back-end training vectors ('cwl')")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--calibration-trials", calibration_trials, "Calibration training trials (half target)")
      ->check(CLI::Range(2, 1 << 30))
      ->capture_default_str();
  app.add_option("--top-n", top_n, "Adaptive s-norm top-N")->check(CLI::Range(2, 1 << 30))->capture_default_str();
  app.add_option("--threads", threads, "Threads: LibTorch intra-op (at::set_num_threads) and OpenBLAS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--seed", seed, "Random seed of the data")->capture_default_str();
  app.add_option("--write", write_dir, "Write inputs and asvcpp's outputs here for the NumPy peer");
  app.add_option("--json", json_path, "Write the timings here (- = stdout)")->capture_default_str();
  app.footer("Example:\n  asv_bench_scoring --threads 2 --write /tmp/scoring --json scoring.json");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(threads);
  if (speaker_rank > dim) throw asv::ConfigError(fmt::format("--speaker-rank {} exceeds --dim {}", speaker_rank, dim));
  if (utterances < 2 * speakers) throw asv::ConfigError("--utterances must be at least 2 x --speakers");

  // ---- data (not timed)
  const std::int64_t backend_speakers = 1000, cal_speakers = 200, cal_utterances = 4000;
  const std::int64_t cohort_first = speakers + backend_speakers + cal_speakers;
  Generator gen(seed, dim, speaker_rank);
  const Matrix means =
      gen.Means(cohort_first + cohort_size, groups, group_share, between_variance);  // trial, back-end, calibration, cohort
  const std::vector<double> durations = gen.Durations(utterances);
  const std::vector<double> cal_durations = gen.Durations(cal_utterances);
  auto noise = [](const std::vector<double>& d) {
    std::vector<double> s(d.size());
    for (std::size_t i = 0; i < d.size(); ++i) s[i] = std::sqrt(6.0 / d[i]);
    return s;
  };
  const Matrix embeddings = gen.Utterances(means, 0, speakers, utterances, noise(durations));
  const Matrix backend_set = gen.Utterances(means, speakers, backend_speakers, backend_vectors,
                                            noise(gen.Durations(backend_vectors)));
  const Matrix cal_embeddings = gen.Utterances(means, speakers + backend_speakers, cal_speakers, cal_utterances,
                                               noise(cal_durations));
  const Matrix cohort = gen.Utterances(means, cohort_first, cohort_size, cohort_size,
                                       std::vector<double>(static_cast<std::size_t>(cohort_size), std::sqrt(1.0 / 8)));
  std::vector<TrialSet> lists;
  lists.push_back(MakeTrials(gen.rng, "vox1_o", list_sizes[0], utterances, speakers, 40, false, groups));
  lists.push_back(MakeTrials(gen.rng, "vox1_e", list_sizes[1], utterances, speakers, speakers, false, groups));
  lists.push_back(MakeTrials(gen.rng, "vox1_h", list_sizes[2], utterances, speakers, speakers, true, groups));
  const TrialSet cal_set =
      MakeTrials(gen.rng, "calibration", calibration_trials, cal_utterances, cal_speakers, cal_speakers, false, groups);
  std::int64_t total_trials = 0;
  for (const TrialSet& l : lists) total_trials += static_cast<std::int64_t>(l.trials.size());

  // ---- timed pipeline
  const asv::backend::Scorer cosine = asv::backend::MakeCosineScorer();
  asv::backend::VectorProcessor processor;
  Matrix processed, processed_cohort, processed_cal;
  std::vector<double> magnitudes, cal_magnitudes;
  const auto total_start = std::chrono::steady_clock::now();
  const double total_cpu = CpuSeconds();
  const Step process = Time([&] {
    processor = asv::backend::VectorProcessor::Train(backend_set, "cwl");
    processed = processor.Process(embeddings);
    processed_cohort = processor.Process(cohort);
    processed_cal = processor.Process(cal_embeddings);
    magnitudes = Magnitudes(embeddings);
    cal_magnitudes = Magnitudes(cal_embeddings);
  });
  asv::backend::SnormStats stats;
  const Step snorm_stats =
      Time([&] { stats = asv::backend::ComputeAdaptiveSnormStats(cosine, processed, processed_cohort, top_n); });
  std::vector<std::vector<float>> raw(lists.size()), normalised(lists.size());
  const Step score = Time([&] {
    for (std::size_t i = 0; i < lists.size(); ++i) raw[i] = asv::backend::ScoreTrials(cosine, processed, lists[i].trials);
  });
  const Step normalise = Time([&] {
    for (std::size_t i = 0; i < lists.size(); ++i) normalised[i] = asv::backend::ApplySnorm(raw[i], stats, lists[i].trials);
  });
  asv::eval::LinearCalibration calibration;
  std::vector<float> cal_scores;
  const Step calibration_train = Time([&] {
    const auto cal_stats = asv::backend::ComputeAdaptiveSnormStats(cosine, processed_cal, processed_cohort, top_n);
    cal_scores = asv::backend::ApplySnorm(asv::backend::ScoreTrials(cosine, processed_cal, cal_set.trials), cal_stats,
                                          cal_set.trials);
    const std::vector<double> f = Features(cal_scores, cal_set.trials, cal_durations, cal_magnitudes);
    std::vector<double> tar, non;
    for (std::size_t t = 0; t < cal_set.trials.size(); ++t) {
      std::vector<double>& side = cal_set.target[t] ? tar : non;
      side.insert(side.end(), f.begin() + static_cast<std::ptrdiff_t>(5 * t), f.begin() + static_cast<std::ptrdiff_t>(5 * t + 5));
    }
    calibration = asv::eval::TrainLinearCalibration(tar, non, asv::eval::QualityFeatureNames());
  });
  std::vector<std::vector<double>> llrs(lists.size());
  const Step calibration_apply = Time([&] {
    for (std::size_t i = 0; i < lists.size(); ++i) {
      llrs[i] = calibration.ApplyAll(Features(normalised[i], lists[i].trials, durations, magnitudes));
    }
  });
  const std::vector<asv::eval::DcfParams> points = {{0.05, 1.0, 1.0}, {0.01, 1.0, 1.0}};
  asv::bench::Json list_reports = asv::bench::Json::array();
  const Step metrics = Time([&] {
    for (std::size_t i = 0; i < lists.size(); ++i) {
      std::vector<double> tar, non;
      for (std::size_t t = 0; t < llrs[i].size(); ++t) (lists[i].target[t] ? tar : non).push_back(llrs[i][t]);
      const asv::eval::LlrMetrics llr = asv::eval::ComputeLlrMetrics(tar, non, points);
      const asv::eval::SortedScores sorted(std::move(tar), std::move(non));
      list_reports.push_back({{"list", lists[i].name},
                              {"trials", sorted.size()},
                              {"targets", sorted.n_target()},
                              {"eer_percent", sorted.Eer().percent()},
                              {"min_dcf_0.05", sorted.MinDcf(points[0]).min_dcf},
                              {"min_dcf_0.01", sorted.MinDcf(points[1]).min_dcf},
                              {"cllr", llr.cllr},
                              {"min_cllr", llr.min_cllr},
                              {"act_dcf_0.05", llr.act_dcf[0].act_dcf},
                              {"act_dcf_0.01", llr.act_dcf[1].act_dcf}});
    }
  });
  const Step total{std::chrono::duration<double>(std::chrono::steady_clock::now() - total_start).count(),
                   CpuSeconds() - total_cpu};
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);

  if (!write_dir.empty()) {
    const fs::path dir(write_dir);
    fs::create_directories(dir);
    auto f32 = [&](const std::string& name, const Matrix& m) {
      WriteRaw(dir / name, m.data(), static_cast<std::size_t>(m.rows() * m.cols()));
    };
    f32("embeddings.f32", embeddings);
    f32("backend.f32", backend_set);
    f32("calibration.f32", cal_embeddings);
    f32("cohort.f32", cohort);
    WriteRaw(dir / "durations.f64", durations.data(), durations.size());
    WriteRaw(dir / "calibration_durations.f64", cal_durations.data(), cal_durations.size());
    WriteTrials(dir / "calibration_trials.i64", cal_set.trials);
    WriteRaw(dir / "calibration_target.u8", cal_set.target.data(), cal_set.target.size());
    WriteRaw(dir / "asvcpp_snorm_mean.f64", stats.mean.data(), stats.mean.size());
    WriteRaw(dir / "asvcpp_snorm_std.f64", stats.std.data(), stats.std.size());
    for (std::size_t i = 0; i < lists.size(); ++i) {
      const std::string& n = lists[i].name;
      WriteTrials(dir / (n + "_trials.i64"), lists[i].trials);
      WriteRaw(dir / (n + "_target.u8"), lists[i].target.data(), lists[i].target.size());
      WriteRaw(dir / (n + "_asvcpp_raw.f32"), raw[i].data(), raw[i].size());
      WriteRaw(dir / (n + "_asvcpp_snorm.f32"), normalised[i].data(), normalised[i].size());
      WriteRaw(dir / (n + "_asvcpp_llr.f64"), llrs[i].data(), llrs[i].size());
    }
    asv::bench::Json meta{{"utterances", utterances}, {"dim", dim},           {"cohort", cohort_size},
                          {"backend_vectors", backend_vectors}, {"calibration_utterances", cal_utterances},
                          {"top_n", top_n},         {"lists", {lists[0].name, lists[1].name, lists[2].name}},
                          {"calibration_weights", calibration.weights}, {"calibration_bias", calibration.bias}};
    asv::bench::WriteJson(meta, (dir / "meta.json").string());
  }

  asv::bench::Json report{{"case", "scoring"},
                          {"utterances", utterances},
                          {"speakers", speakers},
                          {"dim", dim},
                          {"cohort", cohort_size},
                          {"top_n", top_n},
                          {"trials", total_trials},
                          {"threads", threads},
                          {"lists", list_reports},
                          {"calibration", {{"weights", calibration.weights},
                                           {"bias", calibration.bias},
                                           {"iterations", calibration.iterations}}},
                          {"process", process.ToJson()},
                          {"snorm_stats", snorm_stats.ToJson()},
                          {"score", score.ToJson()},
                          {"normalise", normalise.ToJson()},
                          {"calibration_train", calibration_train.ToJson()},
                          {"calibration_apply", calibration_apply.ToJson()},
                          {"metrics", metrics.ToJson()},
                          {"total", total.ToJson()},
                          {"peak_rss_mb", static_cast<double>(usage.ru_maxrss) / 1024.0}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
