// asv_bench_backend: the PLDA back-end (asvcpp/backend/plda.h) and the metrics
// (asvcpp/eval/metrics.h) on synthetic embeddings, the asvcpp side of case 3 of run_benchmarks.py.
//
// Data (deterministic, --seed): two-covariance model with a low-rank speaker subspace, as real
// x-vectors after LDA: x = m_s + e, m_s = sqrt(b) y_s W with y_s ~ N(0, I_R) per speaker, W [R, D]
// with N(0, 1/D) entries (rows nearly orthonormal), e ~ N(0, I_D). In the R speaker directions the
// between-speaker variance b (--between-variance, default 1.5) exceeds the within-speaker variance
// 1; R = --speaker-rank (default 30). The case-3 sizes (D = 512, plda_dim 200, seed 1) give an EER
// of 2.34% and minDCF(0.05) of 0.198, x-vector-like (the old isotropic generator gave ~25%).
// `--speakers` training speakers with `--vectors` rows in all (round robin), and a trial set of
// `--trial-speakers` other speakers, `--enroll` + `--test` vectors, scored all against all
// (enroll x test trials; target = same speaker). Timed, each median and spread over repeats after
// warm-up:
//   train    Plda::TrainClosedForm on the training rows
//   score    MakeScorer(plda_dim) + ScoreAllVsAll(enroll, test); also reported split into
//            score_matrices (MakeScorer: the D^3 linear algebra, once per model) and score_trials
//            (ScoreAllVsAll with a ready scorer)
//   metrics  split by label, SortedScores, EER and minDCF (p_target 0.05, c_miss = c_fa = 1)
//   tie_aware_eer  SortedScores::TieAwareEer of the same scores (the SortedScores built once)
// Threads: --threads sets LibTorch's intra-op threads and, when the BLAS is OpenBLAS, its threads
// too (OpenBLAS keeps its own pool otherwise), so "1 thread" means one core in every library.
// --write DIR writes the inputs (raw little-endian float32/int64, row-major) and asvcpp's scores
// (float64) for the NumPy/scikit-learn peers (tools/bench/peers/plda_backend.py).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "asvcpp/backend/plda.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/eval/metrics.h"
#include "tools/bench/bench_util.h"

// OpenBLAS's thread setter, when the process has OpenBLAS (LibTorch's BLAS on Debian); null otherwise.
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

namespace fs = std::filesystem;

struct Data {
  asv::Matrix train;
  std::vector<std::int64_t> train_speakers;
  asv::Matrix enroll;
  std::vector<std::int64_t> enroll_speakers;
  asv::Matrix test;
  std::vector<std::int64_t> test_speakers;
};

// Rows of `rows` vectors from speakers first_speaker.. (round robin over `speakers` of them):
// means.row(s) + N(0, I) noise.
void Fill(std::mt19937_64& rng, std::int64_t rows, std::int64_t dim, std::int64_t first_speaker, std::int64_t speakers,
          const asv::Matrix& means, asv::Matrix* out, std::vector<std::int64_t>* labels) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  *out = asv::Matrix(rows, dim);
  labels->resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t s = first_speaker + r % speakers;
    (*labels)[static_cast<std::size_t>(r)] = s;
    for (std::int64_t d = 0; d < dim; ++d) out->row(r)[d] = means.row(s)[d] + normal(rng);
  }
}

// Speaker means [n_speakers, dim]: sqrt(b) y W with y [n_speakers, rank] ~ N(0, 1) and W [rank, dim]
// ~ N(0, 1/dim) (see the file comment).
asv::Matrix SpeakerMeans(std::mt19937_64& rng, std::int64_t n_speakers, std::int64_t dim, std::int64_t rank,
                         double between_variance) {
  std::normal_distribution<double> normal(0.0, 1.0);
  std::vector<double> w(static_cast<std::size_t>(rank * dim));
  for (double& v : w) v = normal(rng) / std::sqrt(static_cast<double>(dim));
  asv::Matrix means(n_speakers, dim);
  std::vector<double> row(static_cast<std::size_t>(dim));
  for (std::int64_t s = 0; s < n_speakers; ++s) {
    std::fill(row.begin(), row.end(), 0.0);
    for (std::int64_t k = 0; k < rank; ++k) {
      const double y = std::sqrt(between_variance) * normal(rng);
      for (std::int64_t d = 0; d < dim; ++d) row[static_cast<std::size_t>(d)] += y * w[static_cast<std::size_t>(k * dim + d)];
    }
    for (std::int64_t d = 0; d < dim; ++d) means.row(s)[d] = static_cast<float>(row[static_cast<std::size_t>(d)]);
  }
  return means;
}

template <class T>
void WriteRaw(const fs::path& path, const T* data, std::size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n * sizeof(T)));
  if (!out) throw asv::DataError("cannot write " + path.string());
}

int Main(int argc, char** argv) {
  std::int64_t vectors = 50000;
  std::int64_t speakers = 1000;
  std::int64_t dim = 512;
  std::int64_t plda_dim = 200;
  std::int64_t trial_speakers = 200;
  std::int64_t enroll = 1000;
  std::int64_t test = 1000;
  std::int64_t speaker_rank = 30;
  double between_variance = 1.5;
  int threads = 1;
  int warmup = 1;
  int repeats = 5;
  std::uint64_t seed = 1;
  std::string write_dir;
  std::string json_path = "-";
  CLI::App app{"asv_bench_backend: PLDA training, scoring and EER/minDCF on synthetic embeddings"};
  app.add_option("--vectors", vectors, "Training rows N")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--speakers", speakers, "Training speakers K")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--dim", dim, "Embedding dimension D")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--plda-dim", plda_dim, "PLDA dimension d")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--trial-speakers", trial_speakers, "Speakers of the trial set")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--enroll", enroll, "Enrollment vectors (trials = enroll x test)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--test", test, "Test vectors")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--speaker-rank", speaker_rank, "Rank R of the speaker subspace (<= D)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--between-variance", between_variance,
                 "Between-speaker variance b per speaker direction (within-speaker variance is 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--threads", threads, "Threads: LibTorch intra-op (at::set_num_threads) and OpenBLAS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--warmup", warmup, "Untimed runs first")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "Timed runs")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--seed", seed, "Random seed of the data")->capture_default_str();
  app.add_option("--write", write_dir, "Write inputs and scores here for the peers");
  app.add_option("--json", json_path, "Write the timings here (- = stdout)")->capture_default_str();
  app.footer("Example:\n  asv_bench_backend --threads 1 --write /tmp/plda --json backend.json");
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);
  if (openblas_set_num_threads != nullptr) openblas_set_num_threads(threads);
  if (speaker_rank > dim) throw asv::ConfigError(fmt::format("--speaker-rank {} exceeds --dim {}", speaker_rank, dim));

  std::mt19937_64 rng(seed);
  const asv::Matrix means = SpeakerMeans(rng, speakers + trial_speakers, dim, speaker_rank, between_variance);
  Data data;
  Fill(rng, vectors, dim, 0, speakers, means, &data.train, &data.train_speakers);
  Fill(rng, enroll, dim, speakers, trial_speakers, means, &data.enroll, &data.enroll_speakers);
  Fill(rng, test, dim, speakers, trial_speakers, means, &data.test, &data.test_speakers);

  asv::backend::Plda plda;
  const auto train = asv::bench::Measure(warmup, repeats, [&] {
    plda = asv::backend::Plda::TrainClosedForm(data.train, data.train_speakers);
  });
  asv::Matrix scores;
  const auto score = asv::bench::Measure(warmup, repeats, [&] {
    const auto scorer = plda.MakeScorer(plda_dim);
    scores = scorer.ScoreAllVsAll(data.enroll, data.test);
  });
  std::optional<asv::backend::Scorer> ready;
  const auto score_matrices = asv::bench::Measure(warmup, repeats, [&] { ready = plda.MakeScorer(plda_dim); });
  const auto score_trials =
      asv::bench::Measure(warmup, repeats, [&] { scores = ready->ScoreAllVsAll(data.enroll, data.test); });
  asv::eval::EerResult eer;
  asv::eval::MinDcfResult min_dcf;
  std::int64_t n_target = 0;
  const auto metrics = asv::bench::Measure(warmup, repeats, [&] {
    std::vector<double> target, nontarget;
    target.reserve(static_cast<std::size_t>(enroll));
    nontarget.reserve(static_cast<std::size_t>(enroll * test));
    for (std::int64_t i = 0; i < enroll; ++i) {
      for (std::int64_t j = 0; j < test; ++j) {
        const double s = scores.row(i)[j];
        (data.enroll_speakers[static_cast<std::size_t>(i)] == data.test_speakers[static_cast<std::size_t>(j)]
             ? target
             : nontarget)
            .push_back(s);
      }
    }
    const asv::eval::SortedScores sorted(std::move(target), std::move(nontarget));
    eer = sorted.Eer();
    min_dcf = sorted.MinDcf();
    n_target = sorted.n_target();
  });

  // The tie-aware EER on top of the metrics above (same scores, SortedScores built once).
  asv::eval::TieAwareEerResult tie_aware;
  std::optional<asv::eval::SortedScores> ranked;
  {
    std::vector<double> target, nontarget;
    for (std::int64_t i = 0; i < enroll; ++i) {
      for (std::int64_t j = 0; j < test; ++j) {
        const bool same =
            data.enroll_speakers[static_cast<std::size_t>(i)] == data.test_speakers[static_cast<std::size_t>(j)];
        (same ? target : nontarget).push_back(scores.row(i)[j]);
      }
    }
    ranked.emplace(std::move(target), std::move(nontarget));
  }
  const auto tie_aware_eer = asv::bench::Measure(warmup, repeats, [&] { tie_aware = ranked->TieAwareEer(); });

  if (!write_dir.empty()) {
    const fs::path dir(write_dir);
    fs::create_directories(dir);
    WriteRaw(dir / "train.f32", data.train.data(), static_cast<std::size_t>(vectors * dim));
    WriteRaw(dir / "train_speakers.i64", data.train_speakers.data(), data.train_speakers.size());
    WriteRaw(dir / "enroll.f32", data.enroll.data(), static_cast<std::size_t>(enroll * dim));
    WriteRaw(dir / "enroll_speakers.i64", data.enroll_speakers.data(), data.enroll_speakers.size());
    WriteRaw(dir / "test.f32", data.test.data(), static_cast<std::size_t>(test * dim));
    WriteRaw(dir / "test_speakers.i64", data.test_speakers.data(), data.test_speakers.size());
    std::vector<double> as_double(scores.data(), scores.data() + enroll * test);
    WriteRaw(dir / "asvcpp_scores.f64", as_double.data(), as_double.size());
  }

  asv::bench::Json report{{"case", "backend"},
                          {"vectors", vectors},
                          {"speakers", speakers},
                          {"dim", dim},
                          {"plda_dim", plda_dim},
                          {"enroll", enroll},
                          {"test", test},
                          {"trials", enroll * test},
                          {"n_target", n_target},
                          {"threads", threads},
                          {"eer_percent", eer.percent()},
                          {"min_dcf", min_dcf.min_dcf},
                          {"train", train.ToJson()},
                          {"speaker_rank", speaker_rank},
                          {"between_variance", between_variance},
                          {"score", score.ToJson()},
                          {"score_matrices", score_matrices.ToJson()},
                          {"score_trials", score_trials.ToJson()},
                          {"metrics", metrics.ToJson()},
                          {"tie_aware_eer_percent", tie_aware.percent()},
                          {"tie_aware_eer", tie_aware_eer.ToJson()}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return asv::bench::RunMain(Main, argc, argv);
}
