#include "asvcpp/audio/audio_source.h"

#include <gtest/gtest.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "tests/asvcpp/audio/audio_test_util.h"

namespace asv::audio {
namespace {

using Kind = AudioSource::Kind;

TEST(AudioSourceTest, ParsesFilesPipesAndConcatLists) {
  const AudioSource file = AudioSource::Parse("  /data/vox1/wav/id10270/x6uYqmx31kE/00001.wav ");
  EXPECT_EQ(file.kind, Kind::kFile);
  EXPECT_EQ(file.value, "/data/vox1/wav/id10270/x6uYqmx31kE/00001.wav");
  EXPECT_EQ(file.ToString(), file.value);

  const AudioSource spaced = AudioSource::Parse("/data/my files/a b.flac");
  EXPECT_EQ(spaced.kind, Kind::kFile);
  EXPECT_EQ(spaced.value, "/data/my files/a b.flac");

  const AudioSource pipe = AudioSource::Parse("sox /x/a.sph -t wav - |");
  EXPECT_EQ(pipe.kind, Kind::kPipe);
  EXPECT_EQ(pipe.value, "sox /x/a.sph -t wav -");
  EXPECT_EQ(pipe.ToString(), "sox /x/a.sph -t wav - |");
  EXPECT_EQ(AudioSource::Parse("cat x.wav|").value, "cat x.wav");

  const AudioSource cat = AudioSource::Parse("cat:/out/cat/id00012-abc.txt");
  EXPECT_EQ(cat.kind, Kind::kConcat);
  EXPECT_EQ(cat.value, "/out/cat/id00012-abc.txt");
  EXPECT_EQ(cat.ToString(), "cat:/out/cat/id00012-abc.txt");
}

TEST(AudioSourceTest, RejectsUnsupportedValues) {
  EXPECT_THROW(AudioSource::Parse(""), DataError);
  EXPECT_THROW(AudioSource::Parse("   "), DataError);
  EXPECT_THROW(AudioSource::Parse(" |"), DataError);
  EXPECT_THROW(AudioSource::Parse("-"), DataError);
  EXPECT_THROW(AudioSource::Parse("/data/wav.ark:1234"), DataError);
  EXPECT_THROW(AudioSource::Parse("cat:"), DataError);
}

TEST(ConcatListTest, RoundTripsPathsWithQuotesAndSpaces) {
  testing::TempDir dir("concat_roundtrip");
  const std::vector<std::filesystem::path> parts = {"/a/b/00001.m4a", "/a/it's here/00002.m4a",
                                                    "/a/x y/00003.m4a"};
  const auto list = dir / "cat" / "id1-v.txt";
  WriteConcatList(list, parts);
  EXPECT_EQ(fs::ReadFile(list),
            "file '/a/b/00001.m4a'\nfile '/a/it'\\''s here/00002.m4a'\nfile '/a/x y/00003.m4a'\n");
  EXPECT_EQ(ReadConcatList(list), parts);
}

TEST(ConcatListTest, ResolvesRelativePathsAndSkipsComments) {
  testing::TempDir dir("concat_relative");
  fs::WriteFileAtomic(dir / "l.txt", std::string("ffconcat version 1.0\n# comment\n\nfile a.wav\n"
                                                 "file   'sub/b c.wav'\nfile d\\ e.wav\n"));
  const auto parts = ReadConcatList(dir / "l.txt");
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0], dir / "a.wav");
  EXPECT_EQ(parts[1], dir / "sub/b c.wav");
  EXPECT_EQ(parts[2], dir / "d e.wav");
}

TEST(ConcatListTest, ErrorsNameFileAndLine) {
  testing::TempDir dir("concat_errors");
  const auto expect_error = [&](const std::string& contents, const std::string& needle) {
    fs::WriteFileAtomic(dir / "bad.txt", contents);
    try {
      ReadConcatList(dir / "bad.txt");
      ADD_FAILURE() << "no error for: " << contents;
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("file 'a.wav'\ninpoint 1.0\n", "bad.txt:2: unsupported directive 'inpoint'");
  expect_error("file 'a.wav\n", "bad.txt:1: unterminated single quote");
  expect_error("file\n", "bad.txt:1: 'file' without a path");
  expect_error("file a b\n", "bad.txt:1: unexpected text");
  expect_error("# nothing\n", "names no file");
  EXPECT_THROW(ReadConcatList(dir / "missing.txt"), DataError);
}

}  // namespace
}  // namespace asv::audio
