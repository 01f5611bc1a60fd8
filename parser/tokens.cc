// Values of literal tokens: Python's string escapes, integer literals in any base with their
// 64-bit range check, and float literals with Python's overflow and underflow (tokens.h).
#include "parser/tokens.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <system_error>

#include "parser/grammar.h"

namespace asv::parser::detail {

namespace g = grammar;

[[noreturn]] void Fail(const SourcePos& pos, const std::string& message) {
  throw g::SyntaxError(message, pos.line, pos.column);
}

namespace {

void AppendUtf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string WithoutSeparators(std::string_view token) {
  std::string s;
  for (char c : token) {
    if (c != '_' && c != ' ' && c != '\t') s += c;
  }
  return s;
}

}  // namespace

std::string DecodeString(std::string_view token, const SourcePos& pos) {
  const bool raw = token[0] == 'r' || token[0] == 'R';
  const std::size_t start = raw ? 2 : 1;
  const std::string_view body = token.substr(start, token.size() - start - 1);
  if (raw) return std::string(body);  // Backslashes stay, even before a quote (as in Python).
  if (body.find('\\') == std::string_view::npos) return std::string(body);
  std::string out;
  out.reserve(body.size());
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      out += body[i];
      continue;
    }
    const SourcePos at{pos.file, pos.line, pos.column + static_cast<int>(start + i)};
    const char c = body[i + 1];  // The grammar guarantees a character after a backslash.
    switch (c) {
      case '\\': out += '\\'; ++i; continue;
      case '\'': out += '\''; ++i; continue;
      case '"': out += '"'; ++i; continue;
      case 'n': out += '\n'; ++i; continue;
      case 't': out += '\t'; ++i; continue;
      case 'r': out += '\r'; ++i; continue;
      case 'a': out += '\a'; ++i; continue;
      case 'b': out += '\b'; ++i; continue;
      case 'f': out += '\f'; ++i; continue;
      case 'v': out += '\v'; ++i; continue;
      case 'N': Fail(at, "\\N{...} escapes are not supported; write the character itself or use \\u");
      default: break;
    }
    if (c >= '0' && c <= '7') {
      std::uint32_t cp = 0;
      std::size_t n = 0;
      while (n < 3 && i + 1 + n < body.size() && body[i + 1 + n] >= '0' && body[i + 1 + n] <= '7') {
        cp = cp * 8 + static_cast<std::uint32_t>(body[i + 1 + n] - '0');
        ++n;
      }
      AppendUtf8(out, cp);
      i += n;
      continue;
    }
    if (c == 'x' || c == 'u' || c == 'U') {
      const std::size_t want = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      std::uint32_t cp = 0;
      for (std::size_t k = 0; k < want; ++k) {
        const std::size_t j = i + 2 + k;
        const int d = j < body.size() ? HexDigit(body[j]) : -1;
        if (d < 0) Fail(at, fmt::format("truncated \\{} escape: it needs {} hex digits", c, want));
        cp = cp * 16 + static_cast<std::uint32_t>(d);
      }
      if (cp > 0x10FFFF) Fail(at, fmt::format("\\{} escape is not a Unicode code point (above U+10FFFF)", c));
      if (cp >= 0xD800 && cp <= 0xDFFF) Fail(at, "surrogate code points cannot be stored in UTF-8 text");
      AppendUtf8(out, cp);
      i += 1 + want;
      continue;
    }
    out += '\\';  // Unknown escape: Python keeps the backslash; the character follows as is.
  }
  return out;
}

Value ParseInt(std::string_view token, const SourcePos& pos) {
  std::string s = WithoutSeparators(token);
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  int base = 10;
  if (s.size() > 1 && s[0] == '0' && std::isalpha(static_cast<unsigned char>(s[1]))) {
    const char b = static_cast<char>(std::tolower(static_cast<unsigned char>(s[1])));
    base = b == 'x' ? 16 : b == 'o' ? 8 : 2;
    s.erase(0, 2);
  }
  const std::uint64_t limit = negative ? std::uint64_t{1} << 63 : (std::uint64_t{1} << 63) - 1;
  std::uint64_t magnitude = 0;
  for (char c : s) {
    const auto d = static_cast<std::uint64_t>(HexDigit(c));
    if (magnitude > (limit - d) / static_cast<std::uint64_t>(base)) {
      Fail(pos, fmt::format("integer {} does not fit in 64 bits", token));
    }
    magnitude = magnitude * static_cast<std::uint64_t>(base) + d;
  }
  if (negative) return Value::Int(magnitude == (std::uint64_t{1} << 63) ? std::numeric_limits<std::int64_t>::min()
                                                                      : -static_cast<std::int64_t>(magnitude));
  return Value::Int(static_cast<std::int64_t>(magnitude));
}

Value ParseFloat(std::string_view token) {
  std::string s = WithoutSeparators(token);
  if (s[0] == '+') s.erase(0, 1);
  double d = 0.0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
  (void)end;
  if (ec == std::errc::result_out_of_range) {
    // Python gives inf on overflow and 0.0 on underflow; tell them apart by the decimal exponent.
    const bool negative = s[0] == '-';
    const auto e_pos = s.find_first_of("eE");
    const std::string mantissa = s.substr(negative ? 1 : 0, e_pos == std::string::npos ? std::string::npos
                                                                                      : e_pos - (negative ? 1 : 0));
    long exponent = e_pos == std::string::npos ? 0 : std::strtol(s.c_str() + e_pos + 1, nullptr, 10);
    const auto dot = mantissa.find('.');
    const std::string int_part = mantissa.substr(0, dot);
    const auto first_nonzero = int_part.find_first_not_of('0');
    if (first_nonzero != std::string::npos) exponent += static_cast<long>(int_part.size() - first_nonzero);
    d = exponent > 0 ? std::numeric_limits<double>::infinity() : 0.0;
    if (negative) d = -d;
  }
  return Value::Float(d);
}

}  // namespace asv::parser::detail
