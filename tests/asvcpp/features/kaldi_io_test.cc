#include "asvcpp/features/kaldi_io.h"

#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "tests/asvcpp/features/test_util.h"

using namespace std::string_literals;

namespace asv::features {
namespace {

using testing::TempDir;

using testing::ErrorOf;

Matrix Sample(std::int64_t rows, std::int64_t cols, float scale) {
  Matrix m(rows, cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) m.data()[i] = scale * (static_cast<float>(i) - 3.3f) / 7.0f;
  return m;
}

MatrixD SampleD(std::int64_t rows, std::int64_t cols) {
  MatrixD m(rows, cols);
  for (std::int64_t i = 0; i < rows * cols; ++i) m.data()[i] = (static_cast<double>(i) + 0.1) / 3.0;
  return m;
}

std::size_t FilesIn(const std::filesystem::path& dir) {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

TEST(FeaturesKaldiIo, BinaryLayoutIsKaldis) {
  Matrix m(2, 3);
  for (int i = 0; i < 6; ++i) m.data()[i] = static_cast<float>(i);
  std::ostringstream os;
  WriteKaldiObject(os, true, m);
  std::string expected("\0BFM \4\2\0\0\0\4\3\0\0\0", 15);
  expected.append(reinterpret_cast<const char*>(m.data()), 24);
  EXPECT_EQ(os.str(), expected);
  std::ostringstream ov;
  WriteKaldiObject(ov, true, std::vector<double>{1.0});
  std::string expected_v("\0BDV \4\1\0\0\0", 10);
  const double one = 1.0;
  expected_v.append(reinterpret_cast<const char*>(&one), 8);
  EXPECT_EQ(ov.str(), expected_v);
}

TEST(FeaturesKaldiIo, TextLayoutIsKaldis) {
  Matrix m(2, 2);
  m(0, 0) = 1;
  m(0, 1) = -2.5f;
  m(1, 0) = 3;
  m(1, 1) = 4;
  std::ostringstream os;
  WriteKaldiObject(os, false, m);
  EXPECT_EQ(os.str(), " [\n  1 -2.5 \n  3 4 ]\n");
  std::ostringstream ov;
  WriteKaldiObject(ov, false, std::vector<float>{1, 0, 0.5f});
  EXPECT_EQ(ov.str(), " [ 1 0 0.5 ]\n");
  std::ostringstream oe;
  WriteKaldiObject(oe, false, Matrix());
  EXPECT_EQ(oe.str(), " [ ]\n");
}

TEST(FeaturesKaldiIo, ArkScpRoundTripAllTypes) {
  for (bool text : {false, true}) {
    const auto dir = TempDir(text ? "rt_text" : "rt_bin");
    const std::string ark = (dir / "out" / "feats.ark").string(), scp = (dir / "out" / "feats.scp").string();
    const Matrix fm = Sample(5, 3, 1e3f);
    const MatrixD dm = SampleD(2, 4);
    const std::vector<float> fv = {1.0f, 0.0f, 1.0f / 3.0f, -7e-20f};
    const std::vector<double> dv = {1.0 / 3.0, 2e300};
    {
      TableWriter w(std::string(text ? "ark,scp,t:" : "ark,scp:") + ark + "," + scp);
      w.Write("utt-fm", fm);
      w.Write("utt-dm", dm);
      w.Write("utt-fv", fv);
      w.Write("utt-dv", dv);
      w.Write("utt-empty", Matrix());
      EXPECT_FALSE(std::filesystem::exists(ark));  // nothing presented before Close()
      w.Close();
    }
    EXPECT_EQ(FilesIn(dir / "out"), 2u);  // no temporary files left
    for (const std::string& spec : {"ark:" + ark, "scp:" + scp}) {
      TableReader r(spec);
      ASSERT_TRUE(r.Next());
      EXPECT_EQ(r.key(), "utt-fm");
      EXPECT_EQ(r.value().ToMatrix(), fm) << spec;
      ASSERT_TRUE(r.Next());
      EXPECT_EQ(r.key(), "utt-dm");
      EXPECT_EQ(r.value().ToMatrixD(), dm) << spec;
      ASSERT_TRUE(r.Next());
      EXPECT_EQ(r.value().ToVector(), fv) << spec;
      ASSERT_TRUE(r.Next());
      EXPECT_EQ(r.value().ToVectorD(), dv) << spec;
      ASSERT_TRUE(r.Next());
      EXPECT_EQ(r.key(), "utt-empty");
      EXPECT_EQ(r.value().ToMatrix().rows(), 0);
      EXPECT_FALSE(r.Next());
      EXPECT_FALSE(r.Next());
    }
    // Type conversions: a double matrix read as float, a binary vector is not a matrix.
    const auto entries = ReadScpFile(scp);
    ASSERT_EQ(entries.size(), 5u);
    const Matrix as_float = ReadKaldiMatrix(entries[1].second);
    EXPECT_FLOAT_EQ(as_float(1, 3), static_cast<float>(dm(1, 3)));
    if (!text) {
      EXPECT_THROW(ReadKaldiObject(entries[2].second).ToMatrix(), DataError);
    }
    std::filesystem::remove_all(dir);
  }
}

TEST(FeaturesKaldiIo, ScpOffsetsPointAtTheObject) {
  const auto dir = TempDir("offsets");
  const std::string ark = (dir / "a.ark").string(), scp = (dir / "a.scp").string();
  {
    TableWriter w("ark,scp:" + ark + "," + scp);
    w.Write("first", Sample(2, 2, 1));
    w.Write("second", std::vector<float>{4, 5});
    w.Close();
  }
  const std::string bytes = fs::ReadFile(ark);
  const auto entries = ReadScpFile(scp);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].second, ark + ":6");  // "first " is 6 bytes
  const std::size_t second = bytes.find("second ") + 7;
  EXPECT_EQ(entries[1].second, ark + ":" + std::to_string(second));
  EXPECT_EQ(bytes.substr(second, 5), std::string("\0BFV ", 5));
  EXPECT_EQ(ReadKaldiVector(entries[1].second), (std::vector<float>{4, 5}));
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiIo, ReadsKaldiTextVariants) {
  const auto dir = TempDir("textvariants");
  const std::string ark = (dir / "t.ark").string();
  std::ofstream(ark) << "a  [\n  1 2 \n  3 4 ]\nb [ 1e-3 -inf nan ]\r\nc\n[\n  5\n  6 ]\n  d []\n";
  TableReader r("ark,s,cs:" + ark);
  ASSERT_TRUE(r.Next());
  const Matrix a = r.value().ToMatrix();
  ASSERT_EQ(a.rows(), 2);
  EXPECT_EQ(a(1, 0), 3.0f);
  ASSERT_TRUE(r.Next());
  const auto b = r.value().ToVector();
  ASSERT_EQ(b.size(), 3u);
  EXPECT_FLOAT_EQ(b[0], 1e-3f);
  EXPECT_TRUE(std::isinf(b[1]));
  EXPECT_TRUE(std::isnan(b[2]));
  EXPECT_EQ(r.value().ToMatrix().rows(), 1);  // a one-line text object is also a 1 x n matrix
  ASSERT_TRUE(r.Next());
  EXPECT_EQ(r.key(), "c");
  EXPECT_EQ(r.value().ToMatrix().rows(), 2);
  EXPECT_THROW(r.value().ToVector(), DataError);
  ASSERT_TRUE(r.Next());
  EXPECT_EQ(r.key(), "d");
  EXPECT_TRUE(r.value().ToVector().empty());
  EXPECT_FALSE(r.Next());
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiIo, ErrorsNameFileOffsetAndKey) {
  const auto dir = TempDir("errors");
  const std::string ark = (dir / "a.ark").string(), scp = (dir / "a.scp").string();
  {
    TableWriter w("ark,scp:" + ark + "," + scp);
    w.Write("good", Sample(3, 3, 1));
    w.Write("cut", Sample(4, 4, 1));
    w.Close();
  }
  std::string bytes = fs::ReadFile(ark);
  // Truncated archive: the last matrix loses 10 bytes.
  const std::string truncated = (dir / "trunc.ark").string();
  fs::WriteFileAtomic(truncated, bytes.substr(0, bytes.size() - 10));
  std::string msg = ErrorOf([&] {
    TableReader r("ark:" + truncated);
    while (r.Next()) {
    }
  });
  EXPECT_NE(msg.find(truncated), std::string::npos) << msg;
  EXPECT_NE(msg.find("'cut'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  EXPECT_NE(msg.find(":" + std::to_string(bytes.find("cut ") + 4)), std::string::npos) << msg;
  // Bad token.
  std::string bad = bytes;
  bad.replace(bytes.find("FM "), 3, "XM ");
  const std::string bad_path = (dir / "bad.ark").string();
  fs::WriteFileAtomic(bad_path, bad);
  msg = ErrorOf([&] {
    TableReader r("ark:" + bad_path);
    r.Next();
  });
  EXPECT_NE(msg.find("'XM'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'good'"), std::string::npos) << msg;
  // Offset past the end, missing files, malformed scp lines.
  msg = ErrorOf([&] { ReadKaldiMatrix(ark + ":99999"); });
  EXPECT_NE(msg.find(ark + ":99999"), std::string::npos) << msg;
  EXPECT_NE(msg.find("past the end"), std::string::npos) << msg;
  const std::string scp2 = (dir / "b.scp").string();
  fs::WriteFileAtomic(scp2, "utt1 " + ark + ":99999\n");
  msg = ErrorOf([&] {
    TableReader r("scp:" + scp2);
    r.Next();
  });
  EXPECT_NE(msg.find("utt1"), std::string::npos) << msg;
  EXPECT_NE(ErrorOf([&] { ReadKaldiMatrix((dir / "none.ark").string() + ":0"); }).find("none.ark"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { TableReader r("ark:" + (dir / "none.ark").string()); }).find("none.ark"), std::string::npos);
  fs::WriteFileAtomic(scp2, "utt1 a.ark:1\nlonely\n");
  EXPECT_NE(ErrorOf([&] { ReadScpFile(scp2); }).find("b.scp:2"), std::string::npos);
  // A line over 1 MiB (a binary file named as a script) is refused with its number.
  fs::WriteFileAtomic(scp2, "utt1 a.ark:1\nutt2 " + std::string(2 << 20, 'x') + "\n");
  EXPECT_NE(ErrorOf([&] { ReadScpFile(scp2); }).find("b.scp:2: line of 2097157 bytes, longer than 1 MiB"),
            std::string::npos);
  // Garbage that is not an archive.
  const std::string junk = (dir / "junk.ark").string();
  fs::WriteFileAtomic(junk, "key \0Bjunkjunk"s);
  EXPECT_THROW(
      {
        TableReader r("ark:" + junk);
        r.Next();
      },
      DataError);
  fs::WriteFileAtomic(junk, "lonelykey");
  EXPECT_NE(ErrorOf([&] {
              TableReader r("ark:" + junk);
              r.Next();
            }).find("without an object"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiIo, SpecifiersAndKeys) {
  EXPECT_THROW(TableReader("feats.ark"), DataError);
  EXPECT_THROW(TableReader("ark,scp:a"), DataError);
  EXPECT_THROW(TableReader("ark,p:a"), DataError);
  EXPECT_THROW(TableWriter("scp:a.scp"), DataError);
  EXPECT_THROW(TableWriter("ark,scp:a.ark"), DataError);
  EXPECT_THROW(TableWriter("ark,scp:-,a.scp"), DataError);
  EXPECT_THROW(TableWriter("ark,x:a.ark"), DataError);
  EXPECT_THROW(ReadKaldiMatrix("gunzip -c a.ark.gz |"), DataError);
  EXPECT_THROW(ReadKaldiMatrix("a.ark:12[0:3]"), DataError);
  const auto dir = TempDir("keys");
  TableWriter w("ark:" + (dir / "k.ark").string());
  EXPECT_THROW(w.Write("two words", Matrix()), DataError);
  EXPECT_THROW(w.Write("", Matrix()), DataError);
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiIo, UnclosedWriterLeavesNothing) {
  const auto dir = TempDir("unclosed");
  const std::string ark = (dir / "a.ark").string(), scp = (dir / "a.scp").string();
  try {
    TableWriter w("ark,scp:" + ark + "," + scp);
    w.Write("a", Sample(3, 3, 1));
    throw std::runtime_error("stage failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(FilesIn(dir), 0u);
  // An existing complete table is untouched by a failed rewrite.
  {
    TableWriter w("ark,scp:" + ark + "," + scp);
    w.Write("old", Sample(1, 1, 1));
    w.Close();
  }
  const std::string before = fs::ReadFile(ark);
  {
    TableWriter w("ark,scp:" + ark + "," + scp);
    w.Write("new", Sample(2, 2, 1));
  }
  EXPECT_EQ(fs::ReadFile(ark), before);
  EXPECT_EQ(FilesIn(dir), 2u);
  std::filesystem::remove_all(dir);
}

TEST(FeaturesKaldiIo, StdinAndStdout) {
  const auto dir = TempDir("stdio");
  const std::string captured = (dir / "stdout.ark").string();
  // Redirect fd 1 to a file while a TableWriter writes "ark:-".
  std::fflush(stdout);
  const int saved = ::dup(1);
  const int fd = ::open(captured.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ASSERT_GE(fd, 0);
  ::dup2(fd, 1);
  {
    TableWriter w("ark:-");
    w.Write("x", Sample(2, 3, 1));
    w.Close();
  }
  std::fflush(stdout);
  ::dup2(saved, 1);
  ::close(fd);
  ::close(saved);
  const std::string bytes = fs::ReadFile(captured);
  EXPECT_EQ(bytes.substr(0, 7), std::string("x \0BFM ", 7));
  // Read it back through std::cin.
  std::istringstream in(bytes);
  auto* old = std::cin.rdbuf(in.rdbuf());
  TableReader r("ark:-");
  ASSERT_TRUE(r.Next());
  EXPECT_EQ(r.value().ToMatrix(), Sample(2, 3, 1));
  EXPECT_FALSE(r.Next());
  std::istringstream in2(bytes.substr(2));
  std::cin.rdbuf(in2.rdbuf());
  EXPECT_EQ(ReadKaldiMatrix("-"), Sample(2, 3, 1));
  std::cin.rdbuf(old);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace asv::features
