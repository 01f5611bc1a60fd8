// The recipes' back end (asvcpp/backend/evaluation.h): embedding durations on disk, the
// speaker-mean cohort, calibration trials, s-norm and AS-norm against the cohort checked by a
// hand computation, and calibration into LLRs trained on held-out speakers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/error.h"
#include "asvcpp/eval/llr_metrics.h"
#include "asvcpp/eval/score_file.h"

namespace asv::backend {
namespace {

namespace stdfs = std::filesystem;

struct TempDir {
  stdfs::path path =
      stdfs::temp_directory_path() / ("asv_evaluation_test_" + std::to_string(::getpid()) + "_" +
                                      ::testing::UnitTest::GetInstance()->current_test_info()->name());
  TempDir() {
    stdfs::remove_all(path);
    stdfs::create_directories(path);
  }
  ~TempDir() { stdfs::remove_all(path); }
};

// `speakers` speakers with `per_speaker` embeddings each: x = centre_s + noise * N(0, I), with
// centres N(0, I); ids "s<k>-<i>", durations 2 + i seconds.
struct Synthetic {
  Embeddings embeddings;
  std::vector<std::string> speakers;
};

Synthetic MakeSynthetic(int speakers, int per_speaker, int dim, double noise, std::uint64_t seed,
                        const std::string& prefix = "s") {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal;
  Synthetic out;
  out.embeddings.vectors = Matrix(static_cast<std::int64_t>(speakers) * per_speaker, dim);
  std::int64_t row = 0;
  for (int s = 0; s < speakers; ++s) {
    std::vector<double> centre(static_cast<std::size_t>(dim));
    for (auto& c : centre) c = normal(rng);
    for (int i = 0; i < per_speaker; ++i) {
      for (int d = 0; d < dim; ++d) {
        out.embeddings.vectors(row, d) = static_cast<float>(centre[static_cast<std::size_t>(d)] + noise * normal(rng));
      }
      out.embeddings.ids.push_back(prefix + std::to_string(s) + "-" + std::to_string(i));
      out.embeddings.durations.push_back(2.0 + i);
      out.speakers.push_back(prefix + std::to_string(s));
      ++row;
    }
  }
  return out;
}

double Cosine(const float* a, const float* b, std::int64_t dim) {
  double ab = 0, aa = 0, bb = 0;
  for (std::int64_t d = 0; d < dim; ++d) {
    ab += static_cast<double>(a[d]) * b[d];
    aa += static_cast<double>(a[d]) * a[d];
    bb += static_cast<double>(b[d]) * b[d];
  }
  return ab / std::sqrt(aa * bb);
}

// Mean and population std of the top `n` cosine scores of `x` against the rows of `cohort`.
std::pair<double, double> TopStats(const float* x, const Matrix& cohort, std::int64_t n) {
  std::vector<double> scores;
  for (std::int64_t r = 0; r < cohort.rows(); ++r) scores.push_back(Cosine(x, cohort.row(r), cohort.cols()));
  std::sort(scores.rbegin(), scores.rend());
  double mean = 0;
  for (std::int64_t i = 0; i < n; ++i) mean += scores[static_cast<std::size_t>(i)];
  mean /= static_cast<double>(n);
  double var = 0;
  for (std::int64_t i = 0; i < n; ++i) var += std::pow(scores[static_cast<std::size_t>(i)] - mean, 2);
  return {mean, std::sqrt(var / static_cast<double>(n))};
}

settings::BackendSettings CosineSettings() {
  settings::BackendSettings s;
  s.scoring = Scoring::kCosine;
  s.processing = "";
  return s;
}

// A trial list over `test` embeddings: every pair (i, j), i < j, labelled by speaker.
stdfs::path WriteTrials(const stdfs::path& file, const Synthetic& test) {
  std::ofstream out(file);
  const auto& ids = test.embeddings.ids;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    for (std::size_t j = i + 1; j < ids.size(); ++j) {
      out << ids[i] << ' ' << ids[j] << ' ' << (test.speakers[i] == test.speakers[j] ? "target" : "nontarget")
          << '\n';
    }
  }
  return file;
}

TEST(EvaluationTest, DurationsTravelWithTheEmbeddings) {
  TempDir dir;
  Synthetic data = MakeSynthetic(2, 2, 3, 0.1, 1);
  data.embeddings.durations = {1.5, 2.25, 3.0, 10.125};
  WriteEmbeddings(dir.path / "trial", data.embeddings);
  ASSERT_TRUE(stdfs::exists(dir.path / "trial.utt2dur"));
  const Embeddings back = ReadEmbeddings(dir.path / "trial");
  EXPECT_EQ(back.durations, data.embeddings.durations);

  // A missing or bad duration is an error naming the file.
  { std::ofstream(dir.path / "trial.utt2dur") << "s0-0 1.5\ns0-1 2.25\ns1-0 -3\ns1-1 1\n"; }
  try {
    ReadEmbeddings(dir.path / "trial");
    FAIL() << "a negative duration was read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("trial.utt2dur: duration '-3' of 's1-0'"), std::string::npos) << e.what();
  }
  { std::ofstream(dir.path / "trial.utt2dur") << "s0-0 1.5\n"; }
  EXPECT_THROW(ReadEmbeddings(dir.path / "trial"), DataError);

  // Embeddings without durations leave no stale utt2dur behind.
  data.embeddings.durations.clear();
  WriteEmbeddings(dir.path / "trial", data.embeddings);
  EXPECT_FALSE(stdfs::exists(dir.path / "trial.utt2dur"));
  EXPECT_TRUE(ReadEmbeddings(dir.path / "trial").durations.empty());
}

TEST(EvaluationTest, SpeakerMeansAveragePerSpeakerInSortedOrder) {
  Embeddings e;
  e.ids = {"a", "b", "c", "d"};
  e.vectors = Matrix(4, 2);
  const float values[4][2] = {{1, 2}, {3, 4}, {10, 20}, {5, 8}};
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 2; ++c) e.vectors(r, c) = values[r][c];
  }
  const Embeddings means = SpeakerMeans(e, {"spk2", "spk1", "spk2", "spk1"});
  EXPECT_EQ(means.ids, (std::vector<std::string>{"spk1", "spk2"}));
  EXPECT_FLOAT_EQ(means.vectors(0, 0), 4.0f);  // (3 + 5) / 2
  EXPECT_FLOAT_EQ(means.vectors(0, 1), 6.0f);
  EXPECT_FLOAT_EQ(means.vectors(1, 0), 5.5f);  // (1 + 10) / 2
  EXPECT_FLOAT_EQ(means.vectors(1, 1), 11.0f);
  EXPECT_THROW(SpeakerMeans(e, {"x"}), std::invalid_argument);
}

TEST(EvaluationTest, CalibrationTrialsAreDistinctCorrectlyLabelledAndDeterministic) {
  std::vector<std::string> speakers;
  for (int s = 0; s < 30; ++s) {
    for (int i = 0; i < 1 + s % 4; ++i) speakers.push_back("spk" + std::to_string(s));
  }
  const auto trials = DrawCalibrationTrials(speakers, 101, 7);
  EXPECT_EQ(trials.targets.size(), 51u);
  EXPECT_EQ(trials.nontargets.size(), 50u);
  std::set<std::pair<std::int64_t, std::int64_t>> seen;
  for (const auto* set : {&trials.targets, &trials.nontargets}) {
    for (const auto& t : *set) {
      EXPECT_LT(t.left, t.right);
      EXPECT_TRUE(seen.insert({t.left, t.right}).second) << "duplicate trial";
      const bool same = speakers[static_cast<std::size_t>(t.left)] == speakers[static_cast<std::size_t>(t.right)];
      EXPECT_EQ(same, set == &trials.targets);
    }
  }
  const auto again = DrawCalibrationTrials(speakers, 101, 7);
  ASSERT_EQ(again.targets.size(), trials.targets.size());
  for (std::size_t i = 0; i < again.targets.size(); ++i) EXPECT_EQ(again.targets[i].left, trials.targets[i].left);

  // Fewer possible pairs than asked: all of them. Three speakers with 2, 1, 1 rows: 1 target
  // pair, 5 non-target pairs.
  const auto all = DrawCalibrationTrials({"a", "a", "b", "c"}, 1000, 1);
  EXPECT_EQ(all.targets.size(), 1u);
  EXPECT_EQ(all.nontargets.size(), 5u);
  EXPECT_THROW(DrawCalibrationTrials({"a", "b", "c"}, 10, 1), DataError);  // no target pair
  EXPECT_THROW(DrawCalibrationTrials({"a", "a"}, 10, 1), DataError);       // no non-target pair
}

// s-norm and AS-norm of cosine scores against the speaker-mean cohort, computed by hand.
TEST(EvaluationTest, SnormAndAsnormAgainstTheSpeakerMeansMatchAHandComputation) {
  TempDir dir;
  const Synthetic back = MakeSynthetic(12, 3, 6, 0.7, 2);
  const Synthetic test = MakeSynthetic(4, 2, 6, 0.7, 3, "t");
  const auto trials_file = WriteTrials(dir.path / "trials.txt", test);
  const Embeddings means = SpeakerMeans(back.embeddings, back.speakers);
  for (const auto method : {ScoreNorm::kPlain, ScoreNorm::kAdaptive}) {
    auto s = CosineSettings();
    s.score_norm = true;
    s.score_norm_method = method;
    s.score_norm_adaptive_cohort_size = 5;
    const Backend backend(back.embeddings, back.speakers, s);
    ASSERT_EQ(backend.cohort().rows(), 12);
    const std::int64_t top = method == ScoreNorm::kPlain ? 12 : 5;
    const auto trials = eval::ReadTrialList(trials_file);
    const auto scores = backend.Score(backend.Prepare(test.embeddings), trials);
    ASSERT_EQ(scores.size(), trials.size());
    std::map<std::string, std::int64_t> row_of;
    for (std::size_t i = 0; i < test.embeddings.ids.size(); ++i) {
      row_of[test.embeddings.ids[i]] = static_cast<std::int64_t>(i);
    }
    for (std::size_t t = 0; t < trials.size(); ++t) {
      const float* l = test.embeddings.vectors.row(row_of.at(trials.left[t]));
      const float* r = test.embeddings.vectors.row(row_of.at(trials.right[t]));
      const double raw = Cosine(l, r, 6);
      const auto [ml, sl] = TopStats(l, means.vectors, top);
      const auto [mr, sr] = TopStats(r, means.vectors, top);
      EXPECT_NEAR(scores[t], ((raw - ml) / sl + (raw - mr) / sr) / 2, 1e-4) << EnumToName(method) << " trial " << t;
    }
  }
  // A stored cohort is used as given (here: only two of the speakers).
  auto s = CosineSettings();
  s.score_norm = true;
  s.score_norm_method = ScoreNorm::kPlain;
  Embeddings two;
  two.ids = {means.ids[0], means.ids[1]};
  two.vectors = Matrix(2, 6);
  for (int c = 0; c < 6; ++c) {
    two.vectors(0, c) = means.vectors(0, c);
    two.vectors(1, c) = means.vectors(1, c);
  }
  EXPECT_EQ(Backend(back.embeddings, back.speakers, s, &two).cohort().rows(), 2);
  // ASVtorch's cohort: random back-end rows, capped at their number.
  s.score_norm_cohort = Cohort::kRandomVectors;
  s.score_norm_full_cohort_size = 1000;
  EXPECT_EQ(Backend(back.embeddings, back.speakers, s).cohort().rows(), 36);
}

TEST(EvaluationTest, CalibrationHoldsOutSpeakersAndGivesWellCalibratedLlrs) {
  TempDir dir;
  const Synthetic back = MakeSynthetic(60, 4, 8, 0.9, 4);
  const Synthetic test = MakeSynthetic(10, 4, 8, 0.9, 5, "t");
  const auto trials_file = WriteTrials(dir.path / "trials.txt", test);
  const auto trials = eval::ReadTrialList(trials_file);

  auto plain = CosineSettings();
  plain.score_norm = true;
  const Backend uncalibrated(back.embeddings, back.speakers, plain);
  EXPECT_EQ(uncalibrated.calibration(), nullptr);
  EXPECT_TRUE(uncalibrated.held_out_speakers().empty());

  auto s = plain;
  s.calibration = Calibration::kLinear;
  s.calibration_speakers = 0.2;
  s.calibration_trials = 2000;
  const Backend calibrated(back.embeddings, back.speakers, s);
  ASSERT_NE(calibrated.calibration(), nullptr);
  // 20 % of 60 speakers held out; the cohort (speaker means) keeps the other 48.
  EXPECT_EQ(calibrated.held_out_speakers().size(), 12u);
  EXPECT_EQ(calibrated.cohort().rows(), 48);
  EXPECT_EQ(calibrated.calibration()->feature_names, (std::vector<std::string>{"score"}));

  // Linear calibration maps the normalised scores affinely: compare with a back end trained on the
  // same 48 speakers without calibration.
  std::set<std::string> held(calibrated.held_out_speakers().begin(), calibrated.held_out_speakers().end());
  Synthetic rest;
  std::vector<std::int64_t> rows;
  for (std::size_t i = 0; i < back.speakers.size(); ++i) {
    if (!held.count(back.speakers[i])) rows.push_back(static_cast<std::int64_t>(i));
  }
  rest.embeddings.vectors = Matrix(static_cast<std::int64_t>(rows.size()), 8);
  for (std::size_t k = 0; k < rows.size(); ++k) {
    for (int d = 0; d < 8; ++d) rest.embeddings.vectors(static_cast<std::int64_t>(k), d) = back.embeddings.vectors(rows[k], d);
    rest.embeddings.ids.push_back(back.embeddings.ids[static_cast<std::size_t>(rows[k])]);
    rest.speakers.push_back(back.speakers[static_cast<std::size_t>(rows[k])]);
  }
  const Backend same_data(rest.embeddings, rest.speakers, plain);
  const auto normalised = same_data.Score(same_data.Prepare(test.embeddings), trials);
  const auto llrs = calibrated.Score(calibrated.Prepare(test.embeddings), trials);
  const double w = calibrated.calibration()->weights[0];
  const double b = calibrated.calibration()->bias;
  EXPECT_GT(w, 0);
  for (std::size_t t = 0; t < trials.size(); ++t) EXPECT_NEAR(llrs[t], w * normalised[t] + b, 1e-6);

  // Calibrated LLRs of unseen speakers: Cllr close to minCllr, far below the raw scores' Cllr.
  std::vector<double> tar, non, tar_raw, non_raw;
  for (std::size_t t = 0; t < trials.size(); ++t) {
    const bool target = trials.label[t] == "target";
    (target ? tar : non).push_back(llrs[t]);
    (target ? tar_raw : non_raw).push_back(normalised[t]);
  }
  const double cllr = eval::Cllr(tar, non);
  const double min_cllr = eval::MinCllr(tar, non);
  EXPECT_LT(cllr, eval::Cllr(tar_raw, non_raw));
  EXPECT_LT(cllr - min_cllr, 0.1) << cllr << " vs " << min_cllr;

  // Quality-aware calibration: five features, and embeddings without durations are an error.
  s.calibration = Calibration::kQuality;
  const Backend quality(back.embeddings, back.speakers, s);
  ASSERT_NE(quality.calibration(), nullptr);
  EXPECT_EQ(quality.calibration()->dim(), 5u);
  const auto quality_llrs = quality.Score(quality.Prepare(test.embeddings), trials);
  EXPECT_EQ(quality_llrs.size(), trials.size());
  Embeddings no_durations = test.embeddings;
  no_durations.durations.clear();
  EXPECT_THROW(quality.Score(quality.Prepare(no_durations), trials), DataError);
  Synthetic back_without = back;
  back_without.embeddings.durations.clear();
  EXPECT_THROW(Backend(back_without.embeddings, back_without.speakers, s), DataError);

  // Too few speakers to hold out two and keep two.
  const Synthetic tiny = MakeSynthetic(3, 2, 8, 0.9, 6);
  EXPECT_THROW(Backend(tiny.embeddings, tiny.speakers, s), DataError);
}

// Back-end embeddings of 60 speakers, 2 each (cosine scoring, no processing), whose held-out
// calibration speakers give `kind` trials: "inverted" (the two embeddings of a held-out speaker
// point in opposite directions, so target trials score -1 and non-target ones about 0) or
// "flat" (every embedding is noise, so no trial says anything about its label).
Synthetic DegenerateBackEnd(const std::string& kind, const settings::BackendSettings& s) {
  Synthetic back = MakeSynthetic(60, 2, 8, kind == "flat" ? 1000.0 : 0.3, 21);
  if (kind == "inverted") {
    // Which speakers are held out depends only on the speaker list (seed 0).
    const Backend probe(back.embeddings, back.speakers, s);
    const std::set<std::string> held(probe.held_out_speakers().begin(), probe.held_out_speakers().end());
    for (std::int64_t row = 1; row < back.embeddings.vectors.rows(); row += 2) {
      if (!held.count(back.speakers[static_cast<std::size_t>(row)])) continue;
      for (int d = 0; d < 8; ++d) back.embeddings.vectors(row, d) = -back.embeddings.vectors(row - 1, d);
    }
  }
  return back;
}

TEST(EvaluationTest, DegenerateCalibrationIsReportedAndNotAppliedUnlessAsked) {
  TempDir dir;
  const Synthetic test = MakeSynthetic(10, 4, 8, 0.9, 5, "t");
  const auto trials = eval::ReadTrialList(WriteTrials(dir.path / "trials.txt", test));
  // Cosine scores of the trial list (every pair i < j of the test rows, in order).
  std::vector<double> cosines;
  const auto n = test.embeddings.vectors.rows();
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t j = i + 1; j < n; ++j) {
      cosines.push_back(Cosine(test.embeddings.vectors.row(i), test.embeddings.vectors.row(j), 8));
    }
  }
  ASSERT_EQ(cosines.size(), trials.size());

  for (const std::string kind : {"inverted", "flat"}) {
    SCOPED_TRACE(kind);
    auto s = CosineSettings();
    s.calibration = Calibration::kLinear;
    s.calibration_speakers = 0.2;
    s.calibration_trials = 2000;
    const Synthetic back = DegenerateBackEnd(kind, s);

    // Default: trained, found degenerate, not applied: the scores are the raw cosine scores.
    const Backend kept(back.embeddings, back.speakers, s);
    EXPECT_EQ(kept.calibration_status(), CalibrationStatus::kDegenerateSkipped);
    EXPECT_EQ(kept.calibration(), nullptr);
    ASSERT_NE(kept.trained_calibration(), nullptr);
    EXPECT_TRUE(kept.calibration_use().check.degenerate);
    EXPECT_FALSE(kept.calibration_use().applied);
    EXPECT_EQ(kept.calibration_use().n_target_trials, 12);  // 12 held-out speakers, one pair each
    EXPECT_EQ(kept.calibration_use().n_nontarget_trials, 264);
    const double w = kept.trained_calibration()->weights[0];
    if (kind == "inverted") {
      EXPECT_LT(w, 0.0);
      EXPECT_NE(kept.calibration_use().check.reason.find("negative"), std::string::npos);
    } else {
      EXPECT_GT(kept.calibration_cllr(), 1.0 - kept.calibration_use().check.margin);
      EXPECT_NE(kept.calibration_use().check.reason.find("no information"), std::string::npos);
    }
    const auto raw = kept.Score(kept.Prepare(test.embeddings), trials);
    for (std::size_t t = 0; t < trials.size(); ++t) EXPECT_NEAR(raw[t], cosines[t], 1e-6) << t;

    // backend.keep_degenerate_calibration: the same calibration, applied.
    s.keep_degenerate_calibration = true;
    const Backend applied(back.embeddings, back.speakers, s);
    EXPECT_EQ(applied.calibration_status(), CalibrationStatus::kDegenerateApplied);
    ASSERT_NE(applied.calibration(), nullptr);
    EXPECT_TRUE(applied.calibration_use().applied);
    EXPECT_EQ(applied.calibration()->weights[0], w);
    const double b = applied.calibration()->bias;
    const auto llrs = applied.Score(applied.Prepare(test.embeddings), trials);
    double largest_change = 0;
    for (std::size_t t = 0; t < trials.size(); ++t) {
      EXPECT_NEAR(llrs[t], w * raw[t] + b, 1e-6) << t;
      largest_change = std::max(largest_change, std::fabs(llrs[t] - raw[t]));
    }
    EXPECT_GT(largest_change, 1e-3);
  }

  // A healthy calibration is applied whatever the setting.
  auto s = CosineSettings();
  s.calibration = Calibration::kLinear;
  s.calibration_speakers = 0.2;
  const Synthetic good = MakeSynthetic(60, 4, 8, 0.9, 4);
  const Backend healthy(good.embeddings, good.speakers, s);
  EXPECT_EQ(healthy.calibration_status(), CalibrationStatus::kApplied);
  EXPECT_NE(healthy.calibration(), nullptr);
  EXPECT_FALSE(healthy.calibration_use().check.degenerate);
  const auto none = CosineSettings();
  EXPECT_EQ(Backend(good.embeddings, good.speakers, none).calibration_status(), CalibrationStatus::kNone);
}

}  // namespace
}  // namespace asv::backend
