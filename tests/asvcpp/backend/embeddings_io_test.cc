// Embedding archives: written with a checksum file, read back exactly, and a corrupt archive is an
// error naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <fstream>
#include <string>
#include <vector>

#include "asvcpp/backend/evaluation.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::backend {
namespace {

namespace stdfs = std::filesystem;

TEST(EmbeddingsIoTest, RoundTripWithChecksumAndCorruptionIsAnError) {
  const stdfs::path dir = stdfs::temp_directory_path() / ("asv_embeddings_io_test_" + std::to_string(::getpid()));
  stdfs::remove_all(dir);
  Embeddings e;
  e.ids = {"utt1", "utt2", "utt3"};
  e.vectors = Matrix(3, 4);
  for (std::int64_t r = 0; r < 3; ++r) {
    for (std::int64_t c = 0; c < 4; ++c) e.vectors(r, c) = static_cast<float>(r * 10 + c) + 0.25f;
  }
  WriteEmbeddings(dir / "trial", e);
  ASSERT_TRUE(stdfs::exists(dir / "trial.ark.sha256"));
  const Embeddings back = ReadEmbeddings(dir / "trial");
  EXPECT_EQ(back.ids, e.ids);
  EXPECT_EQ(back.vectors, e.vectors);

  std::string bytes = fs::ReadFile(dir / "trial.ark");
  bytes[bytes.size() - 3] ^= 0x01;  // inside the last vector's values: still a valid archive
  { std::ofstream(dir / "trial.ark", std::ios::binary | std::ios::trunc) << bytes; }
  try {
    ReadEmbeddings(dir / "trial");
    FAIL() << "corrupt embeddings were read";
  } catch (const DataError& error) {
    EXPECT_NE(std::string(error.what()).find((dir / "trial.ark").string() + ": corrupt"), std::string::npos)
        << error.what();
  }
  stdfs::remove(dir / "trial.ark.sha256");  // unchecked without it: a different value, no error
  EXPECT_FALSE(ReadEmbeddings(dir / "trial").vectors == e.vectors);
  stdfs::remove_all(dir);
}

TEST(EmbeddingsIoTest, NonFiniteEmbeddingsAreRejectedNamingTheUtterance) {
  Matrix extracted(3, 2);
  extracted(0, 0) = 1;
  extracted(1, 1) = std::numeric_limits<float>::quiet_NaN();
  extracted(2, 0) = std::numeric_limits<float>::infinity();
  try {
    CollectEmbeddings(extracted, {}, {"a", "b", "c"}, "trial");
    FAIL() << "a NaN embedding was kept";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("trial: the embedding of utterance 'b' is not finite"), std::string::npos)
        << e.what();
  }
  // Left out (no speech), a row is not looked at; the infinite one still is.
  EXPECT_THROW(CollectEmbeddings(extracted, {1}, {"a", "b", "c"}, "trial"), DataError);
  EXPECT_EQ(CollectEmbeddings(extracted, {1, 2}, {"a", "b", "c"}, "trial").ids, std::vector<std::string>{"a"});

  // Read back: an archive written by another tool with an infinity in it.
  const stdfs::path dir = stdfs::temp_directory_path() / ("asv_embeddings_nan_test_" + std::to_string(::getpid()));
  stdfs::remove_all(dir);
  Embeddings e;
  e.ids = {"u1", "u2"};
  e.vectors = Matrix(2, 2);
  e.vectors(1, 0) = -std::numeric_limits<float>::infinity();
  WriteEmbeddings(dir / "plda", e);
  try {
    ReadEmbeddings(dir / "plda");
    FAIL() << "an infinite embedding was read";
  } catch (const DataError& err) {
    EXPECT_NE(std::string(err.what()).find("plda.scp: the embedding of utterance 'u2' is not finite"),
              std::string::npos)
        << err.what();
  }
  stdfs::remove_all(dir);
}

}  // namespace
}  // namespace asv::backend
