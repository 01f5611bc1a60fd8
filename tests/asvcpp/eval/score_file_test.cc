#include "asvcpp/eval/score_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <random>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::eval {
namespace {

namespace stdfs = std::filesystem;

class ScoreFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = stdfs::temp_directory_path() /
           ("asv_score_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    stdfs::remove_all(dir_);
    stdfs::create_directories(dir_);
  }
  void TearDown() override { stdfs::remove_all(dir_); }
  stdfs::path Write(const std::string& name, const std::string& text) {
    const stdfs::path p = dir_ / name;
    fs::WriteFileAtomic(p, text);
    return p;
  }
  // Runs fn, expects DataError whose message contains every fragment.
  template <class Fn>
  void ExpectDataError(Fn&& fn, std::initializer_list<std::string> fragments) {
    try {
      fn();
      ADD_FAILURE() << "no DataError";
    } catch (const DataError& e) {
      for (const std::string& f : fragments) {
        EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "'" << f << "' not in: " << e.what();
      }
    }
  }
  stdfs::path dir_;
};

TEST_F(ScoreFileTest, ReadsTrialListIgnoringExtraColumnsAndBlankLines) {
  const auto p = Write("trials.txt", "a b target\n\nc d nontarget extra cols\r\n  e&f  g\t1\n");
  const TrialList t = ReadTrialList(p);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.left, (std::vector<std::string>{"a", "c", "e&f"}));
  EXPECT_EQ(t.right, (std::vector<std::string>{"b", "d", "g"}));
  EXPECT_EQ(t.label, (std::vector<std::string>{"target", "nontarget", "1"}));
  EXPECT_EQ(t.line, (std::vector<std::int64_t>{1, 3, 4}));
  LabelCounts counts;
  const auto kinds = t.Classify(LabelVocabulary::Default(), &counts);
  EXPECT_EQ(kinds, (std::vector<TrialLabel>{TrialLabel::kTarget, TrialLabel::kNonTarget, TrialLabel::kTarget}));
  EXPECT_EQ(counts.n_target, 2);
}

TEST_F(ScoreFileTest, TrialListErrorsNameFileAndLine) {
  const auto p = Write("bad_trials.txt", "a b target\nc d\n");
  ExpectDataError([&] { ReadTrialList(p); }, {"bad_trials.txt:2:", "2 columns"});
  const auto empty = Write("empty.txt", "\n\n");
  ExpectDataError([&] { ReadTrialList(empty); }, {"empty.txt", "no trials"});
  ExpectDataError([&] { ReadTrialList(dir_ / "missing.txt"); }, {"missing.txt"});
}

TEST_F(ScoreFileTest, ALineOverOneMebibyteIsAnErrorNamingIt) {
  const std::string long_line(std::size_t{1} << 21, 'x');
  const auto trials = Write("binary_trials.txt", "a b target\n" + long_line + " y 1\n");
  ExpectDataError([&] { ReadTrialList(trials); },
                  {"binary_trials.txt:2: line of 2097156 bytes, longer than 1 MiB: not a text list"});
  const auto scores = Write("binary_scores.txt", long_line);
  ExpectDataError([&] { ReadScoreFile(scores, nullptr); }, {"binary_scores.txt:1: line of 2097152 bytes"});
  // A line of exactly 1 MiB is still read.
  const auto wide = Write("wide.txt", std::string((std::size_t{1} << 20) - 12, 'a') + " b target\n");
  EXPECT_EQ(ReadTrialList(wide).size(), 1u);
}

// VoxCeleb's own format (label first, paths) is read too, detected per file; labels outside the
// vocabulary are errors with file:line and their count.
TEST_F(ScoreFileTest, ReadsVoxCelebsFormatAndRejectsUnknownLabels) {
  const auto vox = Write("veri_test.txt",
                         "1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav\n"
                         "0 id10270/x6uYqmx31kE/00001.wav id10300/ize_eiCFEg0/00003.wav\n");
  const TrialList t = ReadTrialList(vox);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.left[1], "id10270/x6uYqmx31kE/00001.wav");
  EXPECT_EQ(t.right[1], "id10300/ize_eiCFEg0/00003.wav");
  EXPECT_EQ(t.label, (std::vector<std::string>{"1", "0"}));
  LabelCounts counts;
  t.Classify(LabelVocabulary::Default(), &counts);
  EXPECT_EQ(counts.n_target, 1);
  EXPECT_EQ(counts.n_nontarget, 1);
  // Ids that look like labels: the third column decides (Kaldi's order when it is a label).
  const auto numeric = Write("numeric.txt", "1 2 0\n3 4 1\n");
  EXPECT_EQ(ReadTrialList(numeric).left, (std::vector<std::string>{"1", "3"}));

  ExpectDataError([&] { ReadTrialList(Write("bad_label.txt", "a b 1\nc d 2\ne f 2\n")); },
                  {"bad_label.txt:2: label '2' is neither a target label", "2 of 3 trials have such labels"});
  ExpectDataError([&] { ReadTrialList(Write("mixed.txt", "1 a/b/c.wav d/e/f.wav\na b 0\n")); },
                  {"mixed.txt:2: label 'a'"});
  ExpectDataError([&] { ReadTrialList(Write("header.txt", "label enroll test\n1 a b\n")); },
                  {"header.txt:1: label", "a header line? trial lists have none"});
}

TEST_F(ScoreFileTest, WritesAsvtorchFormatAndReadsItBackExactly) {
  std::mt19937_64 rng(3);
  std::normal_distribution<double> g(0, 30);
  std::vector<double> scores(1000);
  for (double& s : scores) s = g(rng);
  scores[0] = 0.0;
  scores[1] = -1234.5;
  scores[2] = std::numeric_limits<double>::denorm_min();
  scores[3] = 1e300;
  const auto p = dir_ / "sub" / "scores.txt";
  WriteScoreFile(p, scores);
  const std::string text = fs::ReadFile(p);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.18e\n%.18e\n", 0.0, -1234.5);
  EXPECT_EQ(text.substr(0, std::string(buf).size()), buf);
  EXPECT_EQ(text.substr(0, 51), "0.000000000000000000e+00\n-1.234500000000000000e+03\n");
  for (double s : {scores[4], scores[5], 1e-310}) {
    std::snprintf(buf, sizeof buf, "%.18e", s);
    EXPECT_EQ(FormatScore(s), buf);
  }
  EXPECT_EQ(ReadScoreFile(p), scores);  // %.18e round-trips doubles exactly
  EXPECT_FALSE(stdfs::exists(p.string() + ".tmp." + std::to_string(::getpid())));
}

TEST_F(ScoreFileTest, FloatScoresArePrintedAsTheirExactValue) {
  const auto p = dir_ / "f.txt";
  WriteScoreFile(p, std::vector<float>{0.1f});
  EXPECT_EQ(fs::ReadFile(p), "1.000000014901161194e-01\n");  // what np.savetxt writes for float32(0.1)
}

TEST_F(ScoreFileTest, ThreeColumnFilesAreCheckedAgainstTrials) {
  const auto tp = Write("trials.txt", "a b target\nc d nontarget\n");
  const TrialList trials = ReadTrialList(tp);
  const auto sp = dir_ / "scores3.txt";
  WriteScoreFile(sp, {1.5, -2.0}, trials);
  EXPECT_EQ(fs::ReadFile(sp), "a b 1.500000000000000000e+00\nc d -2.000000000000000000e+00\n");
  EXPECT_EQ(ReadScoreFile(sp, &trials), (std::vector<double>{1.5, -2.0}));
  const auto swapped = Write("swapped.txt", "a b 1\nd c 2\n");
  ExpectDataError([&] { ReadScoreFile(swapped, &trials); }, {"swapped.txt:2:", "'d c'", "trials.txt:2", "'c d'"});
  EXPECT_THROW(WriteScoreFile(sp, {1.0}, trials), std::invalid_argument);
}

TEST_F(ScoreFileTest, ScoreFileErrors) {
  const auto tp = Write("trials.txt", "a b target\nc d nontarget\ne f 0\n");
  const TrialList trials = ReadTrialList(tp);
  ExpectDataError([&] { ReadScoreFile(Write("short.txt", "1\n2\n"), &trials); },
                  {"short.txt", "2 scores", "trials.txt", "3 trials"});
  ExpectDataError([&] { ReadScoreFile(Write("long.txt", "1\n2\n3\n4\n"), &trials); }, {"long.txt", "4 scores"});
  ExpectDataError([&] { ReadScoreFile(Write("nan.txt", "1\nnan\n3\n"), &trials); }, {"nan.txt:2:", "NaN"});
  ExpectDataError([&] { ReadScoreFile(Write("word.txt", "1\n2\nabc\n")); }, {"word.txt:3:", "'abc' is not a number"});
  ExpectDataError([&] { ReadScoreFile(Write("trail.txt", "1\n2.5x\n")); }, {"trail.txt:2:", "'2.5x'"});
  ExpectDataError([&] { ReadScoreFile(Write("cols.txt", "1\na b 2\n")); }, {"cols.txt:2:", "line 1 has 1"});
  ExpectDataError([&] { ReadScoreFile(Write("two.txt", "a 2\n")); }, {"two.txt:1:", "2 columns"});
  ExpectDataError([&] { ReadScoreFile(Write("range.txt", "1e999\n")); }, {"range.txt:1:", "out of the range"});
  const std::vector<double> ok = ReadScoreFile(Write("ok.txt", "+1.5\n\n-inf\n 2e-3 \n"), &trials);
  EXPECT_EQ(ok[0], 1.5);
  EXPECT_TRUE(std::isinf(ok[1]) && ok[1] < 0);
  EXPECT_EQ(ok[2], 2e-3);
}

}  // namespace
}  // namespace asv::eval
