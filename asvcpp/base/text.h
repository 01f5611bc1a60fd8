// Small text utilities shared by the parser, settings and tools.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace asv::text {

/// Byte offset of the first byte that is not part of a valid UTF-8 sequence (overlong forms,
/// surrogates and code points above U+10FFFF are invalid), or nullopt when all of `s` is valid.
/// Linear; ASCII runs are skipped eight bytes at a time.
std::optional<std::size_t> FindInvalidUtf8(std::string_view s);

/// Levenshtein distance (insert, delete, substitute cost 1; adjacent transposition cost 1).
std::size_t EditDistance(std::string_view a, std::string_view b);

/// The candidate closest to `word` when it is close enough to be a plausible typo (distance at
/// most max(1, |word|/3)), else nullopt. Ties keep the first candidate. A word longer than 100
/// bytes is no typo of a name: nullopt. Time O(|word| * distance bound) per candidate of a
/// length within the bound, nothing for the others.
std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string>& candidates);
/// ClosestMatch over names held elsewhere (no copies of the candidates).
std::optional<std::string> ClosestMatch(std::string_view word, const std::vector<std::string_view>& candidates);

/// Removes leading and trailing spaces, tabs and carriage returns.
std::string_view Trim(std::string_view s);

/// Longest line the text lists (utt2spk, wav.scp, trial lists, score files) may hold: 1 MiB. A
/// longer one is no list line (a binary file, an audio file named as a list).
inline constexpr std::size_t kMaxLineBytes = std::size_t{1} << 20;

/// Throws DataError "<path>:<line_number>: line of N bytes, longer than 1 MiB: not a text list"
/// when `line` holds more than kMaxLineBytes bytes.
void CheckLineLength(std::string_view line, std::string_view path, std::int64_t line_number);

}  // namespace asv::text
