#include "asvcpp/base/text.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "asvcpp/base/error.h"

namespace asv::text {

std::optional<std::size_t> FindInvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  const auto n = s.size();
  while (i < n) {
    // Runs of ASCII (usually all of a config file) eight bytes at a time.
    for (std::uint64_t word = 0; i + sizeof word <= n; i += sizeof word) {
      std::memcpy(&word, s.data() + i, sizeof word);
      if ((word & 0x8080808080808080ULL) != 0) break;
    }
    if (i >= n) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    std::uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      cp = c & 0x07;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (std::size_t k = 1; k < len; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (cc & 0x3F);
    }
    const bool overlong = (len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::nullopt;
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

namespace {

// Words longer than this get no suggestion (ClosestMatch).
constexpr std::size_t kMaxWord = 100;
// Longest candidate compared: its length is within the bound, at most kMaxWord / 3, of the word's.
constexpr std::size_t kMaxCandidate = kMaxWord + kMaxWord / 3;

// EditDistance(a, b) when it is at most `bound`, else bound + 1; |b| <= kMaxCandidate. Only the
// diagonal band |i - j| <= bound of the table can hold distances within the bound, and the
// computation stops as soon as a whole row exceeds it: O(|a| * bound) time (nothing when the
// lengths differ by more than the bound), no allocation.
std::size_t EditDistanceWithin(std::string_view a, std::string_view b, std::size_t bound) {
  const std::size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) > bound) return bound + 1;
  const std::size_t over = bound + 1;
  // Rows i-2, i-1 and i of the table. Row i is written on [lo - 1, hi + 1] (the band and a cell
  // of `over` on each side), all that rows i+1 and i+2 read of it, as the band only moves right:
  // nothing else needs initializing.
  std::array<std::size_t, kMaxCandidate + 2> rows[3];
  std::size_t* before = rows[0].data();
  std::size_t* previous = rows[1].data();
  std::size_t* row = rows[2].data();
  for (std::size_t j = 0; j <= std::min(m, bound + 1); ++j) previous[j] = j <= bound ? j : over;
  for (std::size_t i = 1; i <= n; ++i) {
    const std::size_t lo = i > bound ? i - bound : 1;
    const std::size_t hi = std::min(m, i + bound);
    row[lo - 1] = lo == 1 && i <= bound ? i : over;
    if (hi < m) row[hi + 1] = over;
    std::size_t row_min = row[lo - 1];
    for (std::size_t j = lo; j <= hi; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      std::size_t d = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d = std::min(d, before[j - 2] + 1);
      row[j] = std::min(d, over);
      row_min = std::min(row_min, row[j]);
    }
    if (row_min > bound) return over;
    std::size_t* const oldest = before;
    before = previous;
    previous = row;
    row = oldest;
  }
  return std::min(previous[m], over);
}

template <typename Name>
std::optional<std::string> Closest(std::string_view word, const std::vector<Name>& candidates) {
  if (word.size() > kMaxWord) return std::nullopt;
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  const Name* best = nullptr;
  std::size_t best_distance = limit + 1;
  // Characters of the word by byte value, for a lower bound of the distance: every edit
  // (transpositions included) changes the unmatched characters of either side by at most one.
  std::array<int, 256> counts{};
  for (const char ch : word) ++counts[static_cast<unsigned char>(ch)];
  for (const auto& c : candidates) {
    // Only a distance below the best so far matters: a tighter bound each time one is found.
    if (best_distance == 0) break;
    const std::string_view candidate(c);
    const std::size_t n = word.size(), m = candidate.size();
    if ((n > m ? n - m : m - n) >= best_distance) continue;
    std::size_t extra = 0;  // Characters of the candidate the word lacks.
    for (const char ch : candidate) extra += counts[static_cast<unsigned char>(ch)]-- <= 0 ? 1 : 0;
    for (const char ch : candidate) ++counts[static_cast<unsigned char>(ch)];
    const std::size_t missing = n - (m - extra);  // And the other way round.
    if (std::max(extra, missing) >= best_distance) continue;
    const std::size_t dist = EditDistanceWithin(word, candidate, best_distance - 1);
    if (dist < best_distance) {
      best_distance = dist;
      best = &c;
    }
  }
  if (best == nullptr) return std::nullopt;
  return std::string(*best);
}

}  // namespace

std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string>& candidates) {
  return Closest(word, candidates);
}

std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates) {
  return Closest(word, candidates);
}

std::string_view Trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

void CheckLineLength(std::string_view line, std::string_view path, std::int64_t line_number) {
  if (line.size() <= kMaxLineBytes) return;
  throw DataError(fmt::format("{}:{}: line of {} bytes, longer than 1 MiB: not a text list", path, line_number,
                              line.size()));
}

}  // namespace asv::text
