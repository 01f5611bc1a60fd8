// asv_bench_backend: the PLDA back-end (asvcpp/backend/plda.h) and the metrics
// (asvcpp/eval/metrics.h) on synthetic embeddings, the asvcpp side of case 3 of run_benchmarks.py.
//
// Data (deterministic, --seed): `--speakers` training speakers with `--vectors` rows in all, x =
// a m_s + e (a = sqrt(2.5 / sqrt(D)), an EER of a few percent) with m_s, e ~ N(0, I) in `--dim` dimensions; and a trial set of `--trial-speakers`
// other speakers, `--enroll` + `--test` vectors, scored all against all (enroll x test trials;
// target = same speaker). Timed, each median and spread over repeats after warm-up:
//   train    Plda::TrainClosedForm on the training rows
//   score    MakeScorer(plda_dim) + ScoreAllVsAll(enroll, test)
//   metrics  split by label, SortedScores, EER and minDCF (p_target 0.05, c_miss = c_fa = 1)
// --write DIR writes the inputs (raw little-endian float32/int64, row-major) and asvcpp's scores
// (float64) for the NumPy/scikit-learn peers (tools/bench/peers/plda_backend.py).
#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "asvcpp/backend/plda.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/eval/metrics.h"
#include "tools/bench/bench_util.h"

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

// Rows of `rows` vectors from speakers first_speaker.. (round robin over `speakers` of them).
void Fill(std::mt19937_64& rng, std::int64_t rows, std::int64_t dim, std::int64_t first_speaker, std::int64_t speakers,
          const asv::Matrix& means, asv::Matrix* out, std::vector<std::int64_t>* labels) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Between-speaker scale for an EER of a few percent whatever the dimension.
  const float scale = std::sqrt(2.5f / std::sqrt(static_cast<float>(dim)));
  *out = asv::Matrix(rows, dim);
  labels->resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t s = first_speaker + r % speakers;
    (*labels)[static_cast<std::size_t>(r)] = s;
    for (std::int64_t d = 0; d < dim; ++d) out->row(r)[d] = scale * means.row(s)[d] + normal(rng);
  }
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
  app.add_option("--threads", threads, "Intra-op threads (at::set_num_threads)")
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

  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  asv::Matrix means(speakers + trial_speakers, dim);
  for (std::int64_t i = 0; i < means.rows() * dim; ++i) means.data()[i] = normal(rng);
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
    const asv::eval::SortedScores sorted(target, nontarget);
    eer = sorted.Eer();
    min_dcf = sorted.MinDcf();
    n_target = sorted.n_target();
  });

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
                          {"score", score.ToJson()},
                          {"metrics", metrics.ToJson()}};
  asv::bench::WriteJson(report, json_path);
  return asv::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    ASV_LOG(Error, "{}", e.what());
    return asv::ExitCodeFor(e);
  }
}
