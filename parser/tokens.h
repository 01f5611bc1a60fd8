// Internal to parser/: the values of literal tokens (strings with Python's escapes, integers in
// any base, floats) as the grammar's actions (actions.cc) read them. Not a public header.
//
// Each function takes a token the grammar has already matched (grammar.h: string_lit, int_lit,
// float_lit), so it only checks what the grammar cannot; a bad token throws grammar::SyntaxError
// at a source position, which the grammar's control (grammar.h) records as the statement's error.
#pragma once

#include <string>
#include <string_view>

#include "asvcpp/base/diagnostic.h"
#include "parser/value.h"

namespace asv::parser::detail {

/// Throws grammar::SyntaxError with `message` at `pos` (line and column; the file is the
/// statement's).
[[noreturn]] void Fail(const SourcePos& pos, const std::string& message);

/// Decodes a string token (r/R prefix and quotes included) with Python's escape rules. `pos` is
/// the token's position; strings never span lines, so an escape is reported at pos.column plus
/// its offset. Throws grammar::SyntaxError for \N{...}, truncated \x, \u and \U escapes, code
/// points above U+10FFFF and surrogates.
std::string DecodeString(std::string_view token, const SourcePos& pos);

/// The value of an int_lit token (sign, '_' separators and spaces after the sign allowed; 0x,
/// 0o and 0b prefixes). Throws grammar::SyntaxError at `pos` when it does not fit in 64 bits.
Value ParseInt(std::string_view token, const SourcePos& pos);

/// The value of a float_lit token; overflow gives +-inf and underflow +-0.0, as in Python.
Value ParseFloat(std::string_view token);

}  // namespace asv::parser::detail
