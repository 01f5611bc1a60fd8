#include "parser/value.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "asvcpp/base/check.h"

namespace asv::parser {

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.data_ = b;
  return v;
}

Value Value::Int(std::int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.data_ = i;
  return v;
}

Value Value::Float(double f) {
  Value v;
  v.kind_ = Kind::kFloat;
  v.data_ = f;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.data_ = std::move(s);
  return v;
}

Value Value::Tuple(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kTuple;
  v.data_ = std::move(items);
  return v;
}

Value Value::List(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::kList;
  v.data_ = std::move(items);
  return v;
}

Value Value::Dict(std::vector<std::pair<Value, Value>> entries) {
  Value v;
  v.kind_ = Kind::kDict;
  v.data_ = std::move(entries);
  return v;
}

bool Value::as_bool() const {
  ASV_CHECK(kind_ == Kind::kBool, KindName());
  return *std::get_if<bool>(&data_);
}

std::int64_t Value::as_int() const {
  ASV_CHECK(kind_ == Kind::kInt, KindName());
  return *std::get_if<std::int64_t>(&data_);
}

double Value::as_float() const {
  ASV_CHECK(kind_ == Kind::kFloat || kind_ == Kind::kInt, KindName());
  return kind_ == Kind::kInt ? static_cast<double>(*std::get_if<std::int64_t>(&data_)) : *std::get_if<double>(&data_);
}

const std::string& Value::as_string() const {
  ASV_CHECK(kind_ == Kind::kString, KindName());
  return *std::get_if<std::string>(&data_);
}

const std::vector<Value>& Value::items() const {
  ASV_CHECK(is_sequence(), KindName());
  return *std::get_if<std::vector<Value>>(&data_);
}

const std::vector<std::pair<Value, Value>>& Value::entries() const {
  ASV_CHECK(kind_ == Kind::kDict, KindName());
  return *std::get_if<std::vector<std::pair<Value, Value>>>(&data_);
}

const char* Value::KindName() const noexcept {
  switch (kind_) {
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kTuple: return "tuple";
    case Kind::kList: return "list";
    case Kind::kDict: return "dict";
  }
  return "?";
}

namespace {

// Python's float repr: shortest round-trip digits; exponent form when exp < -4 or >= 16.
std::string FloatRepr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*e", precision - 1, f);
    if (std::strtod(buf, nullptr) == f) break;
  }
  // buf holds d.ddde[+-]XX with the shortest digits.
  std::string s(buf);
  const auto e_pos = s.find('e');
  std::string mantissa = s.substr(0, e_pos);
  const int exponent = std::atoi(s.c_str() + e_pos + 1);
  bool negative = false;
  if (!mantissa.empty() && mantissa[0] == '-') {
    negative = true;
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out;
  if (exponent < -4 || exponent >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  } else if (exponent < 0) {
    out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
  } else {
    const auto int_len = static_cast<std::size_t>(exponent + 1);
    if (digits.size() <= int_len) {
      out = digits + std::string(int_len - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, int_len) + "." + digits.substr(int_len);
    }
  }
  return negative ? "-" + out : out;
}

std::string StringRepr(const std::string& s) {
  // Python prefers single quotes unless the string contains ' and no ".
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c == static_cast<unsigned char>(quote)) {
          out += '\\';
          out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7F) {
          out += fmt::format("\\x{:02x}", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string Value::Repr() const {
  switch (kind_) {
    case Kind::kNone: return "None";
    case Kind::kBool: return as_bool() ? "True" : "False";
    case Kind::kInt: return std::to_string(as_int());
    case Kind::kFloat: return FloatRepr(as_float());
    case Kind::kString: return StringRepr(as_string());
    case Kind::kTuple:
    case Kind::kList: {
      const auto& elems = items();
      std::string out = kind_ == Kind::kTuple ? "(" : "[";
      for (std::size_t i = 0; i < elems.size(); ++i) {
        if (i > 0) out += ", ";
        out += elems[i].Repr();
      }
      if (kind_ == Kind::kTuple && elems.size() == 1) out += ",";
      out += kind_ == Kind::kTuple ? ")" : "]";
      return out;
    }
    case Kind::kDict: {
      const auto& pairs = entries();
      std::string out = "{";
      for (std::size_t i = 0; i < pairs.size(); ++i) {
        if (i > 0) out += ", ";
        out += pairs[i].first.Repr() + ": " + pairs[i].second.Repr();
      }
      return out + "}";
    }
  }
  return "?";
}

bool operator==(const Value& a, const Value& b) {
  // Same kind, same alternative; variant's == compares doubles as == does (NaN != NaN, 0.0 == -0.0).
  return a.kind_ == b.kind_ && a.data_ == b.data_;
}

std::string TypeExpr::ToString() const {
  std::string out = name;
  if (!args.empty()) {
    out += "[";
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i > 0) out += ", ";
      out += args[i].ToString();
    }
    out += "]";
  }
  return out;
}

}  // namespace asv::parser
