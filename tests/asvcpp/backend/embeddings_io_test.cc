// Embedding archives: written with a checksum file, read back exactly, and a corrupt archive is an
// error naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

}  // namespace
}  // namespace asv::backend
