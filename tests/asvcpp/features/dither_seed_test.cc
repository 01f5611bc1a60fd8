#include "asvcpp/features/dither_seed.h"

#include <gtest/gtest.h>

namespace asv::features {
namespace {

TEST(DitherSeedTest, IsFnv1a64) {
  EXPECT_EQ(DitherSeed(""), 14695981039346656037ull);
  EXPECT_EQ(DitherSeed("a"), 0xaf63dc4c8601ec8cull);  // published FNV-1a 64 test vector
  EXPECT_NE(DitherSeed("id10001-vidA-00001"), DitherSeed("id10001-vidA-00002"));
}

}  // namespace
}  // namespace asv::features
