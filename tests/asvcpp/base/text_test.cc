#include "asvcpp/base/text.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace asv::text {
namespace {

TEST(TextTest, ValidUtf8) {
  EXPECT_FALSE(FindInvalidUtf8("plain ascii").has_value());
  EXPECT_FALSE(FindInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80").has_value());
}

TEST(TextTest, InvalidUtf8Offsets) {
  EXPECT_EQ(FindInvalidUtf8("ab\xFF"), 2u);              // never valid
  EXPECT_EQ(FindInvalidUtf8("a\xC3"), 1u);               // truncated
  EXPECT_EQ(FindInvalidUtf8("a\xC0\xAF"), 1u);           // overlong '/'
  EXPECT_EQ(FindInvalidUtf8("xy\xED\xA0\x80"), 2u);      // surrogate
  EXPECT_EQ(FindInvalidUtf8("\xE9t\xE9"), 0u);           // Latin-1 bytes
  // Around the eight-byte ASCII skip: a bad byte at every offset of a 40-byte text, valid
  // multi-byte sequences between ASCII runs, and a short tail.
  for (std::size_t at = 0; at < 40; ++at) {
    std::string text(40, 'a');
    text[at] = '\xFF';
    EXPECT_EQ(FindInvalidUtf8(text), at);
  }
  EXPECT_FALSE(FindInvalidUtf8("0123456789abcdef\xC3\xA9" "0123456789abcdef\xE2\x82\xAC" "xyz").has_value());
  EXPECT_EQ(FindInvalidUtf8("0123456789abcdef\xC3\xA9" "0123456789abcdef\xC3"), 34u);  // truncated at the end
}

TEST(TextTest, EditDistance) {
  EXPECT_EQ(EditDistance("", ""), 0u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("frame_layer_sise", "frame_layer_size"), 1u);
  EXPECT_EQ(EditDistance("ab", "ba"), 1u);  // transposition
}

TEST(TextTest, ClosestMatch) {
  const std::vector<std::string> fields = {"frame_layer_size", "stat_size", "embedding_size"};
  EXPECT_EQ(ClosestMatch("frame_layer_sise", fields), "frame_layer_size");
  EXPECT_EQ(ClosestMatch("stat_sizes", fields), "stat_size");
  EXPECT_FALSE(ClosestMatch("optimizer", fields).has_value());
}

// The banded, early-stopping search gives what the full distance gives.
TEST(TextTest, ClosestMatchAgreesWithEditDistance) {
  std::mt19937 random(3);
  const auto word = [&](std::size_t max_size) {
    std::string w(random() % (max_size + 1), 'a');
    for (char& c : w) c = "abc_"[random() % 4];
    return w;
  };
  for (int round = 0; round < 3000; ++round) {
    const std::string w = word(12);
    std::vector<std::string> candidates;
    for (std::size_t k = random() % 6; k > 0; --k) candidates.push_back(word(14));
    const std::size_t limit = std::max<std::size_t>(1, w.size() / 3);
    std::optional<std::string> want;
    std::size_t best = limit + 1;
    for (const auto& c : candidates) {
      if (EditDistance(w, c) < best) {
        best = EditDistance(w, c);
        want = c;
      }
    }
    EXPECT_EQ(ClosestMatch(w, candidates), want) << w;
    const std::vector<std::string_view> views(candidates.begin(), candidates.end());
    EXPECT_EQ(ClosestMatch(w, views), want) << w;
  }
}

TEST(TextTest, ClosestMatchIgnoresImplausiblyLongWords) {
  const std::string near(100, 'a');
  using Names = std::vector<std::string>;
  EXPECT_EQ(ClosestMatch(near + "b", Names{near + "c", "a"}), std::nullopt);
  EXPECT_EQ(ClosestMatch(near.substr(1) + "b", Names{near}), near);
  // Two long words one edit apart, and a huge one: answered at once.
  const std::string huge(1 << 20, 'a');
  EXPECT_EQ(ClosestMatch(huge, Names{huge + "b", "network", "a"}), std::nullopt);
}

TEST(TextTest, Trim) {
  EXPECT_EQ(Trim("  a b \t\r"), "a b");
  EXPECT_EQ(Trim("   "), "");
}

}  // namespace
}  // namespace asv::text
