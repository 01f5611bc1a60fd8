#include "asvcpp/data/trial_list.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "tests/asvcpp/data/data_test_util.h"

namespace asv::data {
namespace {

using testing::Contains;
using testing::ErrorOf;
using testing::TempDir;
using testing::Write;

TEST(TrialListTest, ReadsIdFormatIgnoringExtraColumns) {
  TempDir dir("ids");
  Write(dir / "trials", "a b target extra 0.5\n\nc&d e nontarget\r\n");
  const TrialList list = ReadTrialList(dir / "trials");
  ASSERT_EQ(list.trials.size(), 2u);
  EXPECT_EQ(list.trials[0].left, "a");
  EXPECT_EQ(list.trials[0].label, "target");
  EXPECT_EQ(list.trials[1].left, "c&d");
  EXPECT_EQ(list.trials[1].label, "nontarget");
  EXPECT_EQ(list.trials[1].line, 3);

  Write(dir / "bad", "a b 1\na b\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTrialList(dir / "bad"); }), "bad:2: expected '<left> <right> <label>', found 2 fields"));
  Write(dir / "bad", "a&&b c 1\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTrialList(dir / "bad"); }), "bad:1: 'a&&b' has an empty '&' part"));
}

TEST(TrialListTest, VoxCelebPathsMapToIds) {
  EXPECT_EQ(VoxCelebPathToId("id10270/x6uYqmx31kE/00001.wav"), "id10270-x6uYqmx31kE-00001");
  EXPECT_EQ(VoxCelebPathToId("id1/-a_b-/00002.x.wav"), "id1--a_b--00002");
  EXPECT_THROW(VoxCelebPathToId("id10270/00001.wav"), std::invalid_argument);
  EXPECT_THROW(VoxCelebPathToId("a/b/c/d.wav"), std::invalid_argument);
  EXPECT_THROW(VoxCelebPathToId("a//d.wav"), std::invalid_argument);
}

TEST(TrialListTest, OfficialListConversionKeepsTheFirstLine) {
  TempDir dir("official");
  Write(dir / "veri_test.txt",
        "1 id10270/x6uYqmx31kE/00001.wav id10270/8jEAjG6SegY/00008.wav\n"
        "0 id10270/x6uYqmx31kE/00001.wav id10300/ize_eiCFEg0/00003.wav\n");
  EXPECT_EQ(DetectTrialListFormat(dir / "veri_test.txt"), TrialListFormat::kVoxCelebOfficial);
  const TrialList list = ConvertTrialList(dir / "veri_test.txt", dir / "out" / "veri_test.txt");
  ASSERT_EQ(list.trials.size(), 2u);
  EXPECT_EQ(fs::ReadFile(dir / "out" / "veri_test.txt"),
            "id10270-x6uYqmx31kE-00001 id10270-8jEAjG6SegY-00008 1\n"
            "id10270-x6uYqmx31kE-00001 id10300-ize_eiCFEg0-00003 0\n");
  // Converting the converted list again changes nothing.
  EXPECT_EQ(DetectTrialListFormat(dir / "out" / "veri_test.txt"), TrialListFormat::kIds);
  ConvertTrialList(dir / "out" / "veri_test.txt", dir / "again.txt");
  EXPECT_EQ(fs::ReadFile(dir / "again.txt"), fs::ReadFile(dir / "out" / "veri_test.txt"));

  Write(dir / "broken.txt", "1 id1/v/1.wav id2/v/2.wav\n1 id1/v/1.wav id2/2.wav\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadVoxCelebTrialList(dir / "broken.txt"); }),
                       "broken.txt:2: 'id2/2.wav' is not a VoxCeleb path"));
}

// Labels outside the target/non-target vocabulary, empty lists and header lines are errors that
// name the file and line, never trials silently left out or a list of 0 trials.
TEST(TrialListTest, UnknownLabelsEmptyListsAndHeadersAreErrors) {
  TempDir dir("labels");
  for (const char* label : {"2", "yes", "1.0"}) {
    Write(dir / "ids.txt", std::string("a b 1\nc d 0\ne f ") + label + "\ng h " + label + "\n");
    const std::string message = ErrorOf([&] { ReadTrialList(dir / "ids.txt"); });
    EXPECT_TRUE(Contains(message, std::string("ids.txt:3: label '") + label + "' is neither a target label ('Target'"))
        << message;
    EXPECT_TRUE(Contains(message, "; 2 of 4 trials have such labels")) << message;
    Write(dir / "official.txt", std::string(label) + " id1/v/1.wav id2/v/2.wav\n");
    EXPECT_TRUE(Contains(ErrorOf([&] { ReadVoxCelebTrialList(dir / "official.txt"); }), "official.txt:1: label '"));
  }
  Write(dir / "empty.txt", "");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTrialList(dir / "empty.txt"); }), "empty.txt: trial list has no trials"));
  Write(dir / "blank.txt", "\n\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ConvertTrialList(dir / "blank.txt", dir / "out.txt"); }), "no trials"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out.txt"));
  Write(dir / "header.txt", "enrollment test label\nid1-v-1 id2-v-2 1\n");
  const std::string header = ErrorOf([&] { ReadTrialList(dir / "header.txt"); });
  EXPECT_TRUE(Contains(header, "header.txt:1: label 'label'")) << header;
  EXPECT_TRUE(Contains(header, "(a header line? trial lists have none)")) << header;
}

TEST(TrialListTest, TrialUtterancesExpandSessionsInFirstAppearanceOrder) {
  TrialList list;
  list.trials = {{"a&b", "c", "1", 1}, {"c", "d", "0", 2}, {"b", "e&a", "1", 3}};
  EXPECT_EQ(TrialUtterances(list), (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  EXPECT_EQ(TrialUtterances(list, TrialSide::kEnroll), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(TrialUtterances(list, TrialSide::kTest), (std::vector<std::string>{"c", "d", "e", "a"}));
  TrialList other;
  other.trials = {{"f", "a", "1", 1}};
  EXPECT_EQ(TrialUtterances({list, other}), (std::vector<std::string>{"a", "b", "c", "d", "e", "f"}));
  EXPECT_EQ(SplitSessions("x"), (std::vector<std::string>{"x"}));
}

TEST(TrialListTest, UnknownUtterancesAreReportedWithFileAndLine) {
  TempDir dir("unknown");
  Write(dir / "trials", "a b 1\na x&y 0\nz b 1\nx a 1\n");
  const TrialList list = ReadTrialList(dir / "trials");
  const std::set<std::string> known = {"a", "b", "y"};
  const auto is_known = [&](const std::string& id) { return known.count(id) > 0; };
  const auto unknown = FindUnknownUtterances(list, is_known);
  ASSERT_EQ(unknown.size(), 2u);
  EXPECT_EQ(unknown[0].id, "x");
  EXPECT_EQ(unknown[0].line, 2);
  EXPECT_EQ(unknown[1].id, "z");
  EXPECT_EQ(unknown[1].line, 3);
  const std::string message = ErrorOf([&] { CheckTrialUtterances(list, "voxceleb1", is_known); });
  EXPECT_TRUE(Contains(message, "2 utterances not in data set 'voxceleb1'")) << message;
  EXPECT_TRUE(Contains(message, "trials:2: unknown utterance 'x'")) << message;
  EXPECT_TRUE(Contains(message, "trials:3: unknown utterance 'z'")) << message;
  CheckTrialUtterances(list, "all", [](const std::string&) { return true; });
}

}  // namespace
}  // namespace asv::data
