#include "asvcpp/data/table.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/asvcpp/data/data_test_util.h"

namespace asv::data {
namespace {

using testing::Contains;
using testing::ErrorOf;
using testing::TempDir;
using testing::Write;

TEST(TableTest, ReadsWavScpValuesWithSpacesAndPipes) {
  TempDir dir("wavscp");
  Write(dir / "wav.scp",
        "b-1 /data/my files/b 1.wav\r\n\n  a-1\tsox /x/a.sph -t wav - |  \nc-1 cat:/l/c.txt\n");
  const Table t = ReadTable(dir / "wav.scp", ValueFormat::kRestOfLine);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.at("a-1"), "sox /x/a.sph -t wav - |");
  EXPECT_EQ(t.at("b-1"), "/data/my files/b 1.wav");
  EXPECT_EQ(t.begin()->first, "a-1");  // sorted
}

TEST(TableTest, ValidationErrorsNameFileAndLine) {
  TempDir dir("errors");
  Write(dir / "utt2spk", "u1 s1\nu2 s2\nu1 s3\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTable(dir / "utt2spk", ValueFormat::kSingleToken); }),
                       "utt2spk:3: duplicate id 'u1' (first on line 1)"));
  Write(dir / "utt2spk", "u1 s1\n\nu2\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTable(dir / "utt2spk", ValueFormat::kSingleToken); }),
                       "utt2spk:3: 'u2' has no value"));
  Write(dir / "utt2spk", "u1 s1 extra\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTable(dir / "utt2spk", ValueFormat::kSingleToken); }),
                       "utt2spk:1: expected 2 fields"));
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTable(dir / "nothere", ValueFormat::kSingleToken); }),
                       "nothere"));
  Write(dir / "utt2num_frames", "u1 100\nu2 12x\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadCounts(dir / "utt2num_frames"); }),
                       "utt2num_frames:2: 'u2': expected a non-negative integer, found '12x'"));
  Write(dir / "spk2utt", "s1 u1 u2\ns2 u3 u1\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadSpk2Utt(dir / "spk2utt"); }),
                       "spk2utt:2: utterance 'u1' listed twice (also on line 1)"));
  Write(dir / "spk2utt", "s1\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadSpk2Utt(dir / "spk2utt"); }), "spk2utt:1: speaker 's1' has no utterances"));
}

TEST(TableTest, ALineOverOneMebibyteIsAnErrorNamingIt) {
  TempDir dir("long_line");
  Write(dir / "utt2spk", "u1 s1\nu2 " + std::string(std::size_t{1} << 20, 's') + "\n");
  EXPECT_TRUE(Contains(ErrorOf([&] { ReadTable(dir / "utt2spk", ValueFormat::kSingleToken); }),
                       "utt2spk:2: line of 1048579 bytes, longer than 1 MiB"));
}

TEST(TableTest, WritesInCLocaleByteOrder) {
  TempDir dir("order");
  // Byte order: uppercase before '_' before lowercase, '-' before digits; "a" before "a-b".
  const Table t = {{"b", "1"}, {"a_x", "2"}, {"a-b", "3"}, {"B", "4"}, {"a", "5"}, {"a0", "6"}};
  WriteTable(dir / "t", t);
  EXPECT_EQ(fs::ReadFile(dir / "t"), "B 4\na 5\na-b 3\na0 6\na_x 2\nb 1\n");
  EXPECT_THROW(WriteTable(dir / "bad", Table{{"has space", "x"}}), std::invalid_argument);
  EXPECT_THROW(WriteTable(dir / "bad", Table{{"k", "a\nb"}}), std::invalid_argument);
}

TEST(TableTest, Spk2UttRoundTripsAndCountsWrite) {
  TempDir dir("spk2utt");
  const Table utt2spk = {{"s2-b", "s2"}, {"s1-a", "s1"}, {"s1-c", "s1"}, {"s2-a", "s2"}};
  const Spk2Utt spk2utt = MakeSpk2Utt(utt2spk);
  WriteSpk2Utt(dir / "spk2utt", spk2utt);
  EXPECT_EQ(fs::ReadFile(dir / "spk2utt"), "s1 s1-a s1-c\ns2 s2-a s2-b\n");
  EXPECT_EQ(ReadSpk2Utt(dir / "spk2utt"), spk2utt);
  EXPECT_EQ(MakeUtt2Spk(spk2utt), utt2spk);
  WriteCounts(dir / "utt2num_frames", {{"b", 7}, {"a", 0}});
  EXPECT_EQ(ReadCounts(dir / "utt2num_frames"), (Counts{{"a", 0}, {"b", 7}}));
}

TEST(TableTest, SortedBySpeakerCheck) {
  EXPECT_TRUE(IsSortedBySpeaker({{"s1-a", "s1"}, {"s1-b", "s1"}, {"s2-a", "s2"}}));
  std::string bad;
  EXPECT_FALSE(IsSortedBySpeaker({{"a", "s2"}, {"b", "s1"}}, &bad));
  EXPECT_EQ(bad, "b");
  EXPECT_TRUE(IsValidId("id10270-x6uYqmx31kE-00001"));
  EXPECT_FALSE(IsValidId(""));
  EXPECT_FALSE(IsValidId("a b"));
}

}  // namespace
}  // namespace asv::data
