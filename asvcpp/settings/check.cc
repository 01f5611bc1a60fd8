#include "asvcpp/settings/check.h"

#include <fmt/format.h>

#include <algorithm>

#include "asvcpp/base/text.h"

namespace asv::settings {

using parser::TypeExpr;
using parser::Value;
using Kind = TypeDesc::Kind;

namespace {

std::string Got(const Value& v) { return fmt::format("{} {}", v.KindName(), v.Repr()); }

void Mismatch(const std::string& what, const std::string& expected, const Value& v, const Site& site,
              Diagnostics& diags) {
  diags.Error(site.At(v), fmt::format("{} must be {}, got {}", what, expected, Got(v)), site.source_line);
}

bool CheckTypeAs(const TypeDesc& type, const Value& value, const std::string& what, const std::string& expected,
                 const Site& site, Diagnostics& diags) {
  switch (type.kind) {
    case Kind::kBool:
      if (value.kind() == Value::Kind::kBool) return true;
      Mismatch(what, expected, value, site, diags);
      return false;
    case Kind::kInt:
      if (value.kind() != Value::Kind::kInt) {
        Mismatch(what, expected, value, site, diags);
        return false;
      }
      if (value.as_int() < type.int_min || value.as_int() > type.int_max) {
        diags.Error(site.At(value),
                    fmt::format("{} = {} is out of range [{}, {}]", what, value.as_int(), type.int_min, type.int_max),
                    site.source_line);
        return false;
      }
      return true;
    case Kind::kFloat:
      if (value.kind() == Value::Kind::kFloat || value.kind() == Value::Kind::kInt) return true;
      Mismatch(what, expected, value, site, diags);
      return false;
    case Kind::kString:
      if (value.kind() == Value::Kind::kString) return true;
      Mismatch(what, expected, value, site, diags);
      return false;
    case Kind::kOptional:
      if (value.is_none()) return true;
      return CheckTypeAs(type.element(), value, what, type.element().ToString() + " or None", site, diags);
    case Kind::kList:
    case Kind::kTuple: {
      if (!value.is_sequence()) {
        Mismatch(what, expected, value, site, diags);
        return false;
      }
      bool ok = true;
      const auto& items = value.items();
      for (std::size_t i = 0; i < items.size(); ++i) {
        ok &= CheckType(type.element(), items[i], fmt::format("{}[{}]", what, i), site, diags);
      }
      return ok;
    }
    case Kind::kDict: {
      if (value.kind() != Value::Kind::kDict) {
        Mismatch(what, expected, value, site, diags);
        return false;
      }
      bool ok = true;
      for (const auto& [k, v] : value.entries()) {
        if (k.kind() != Value::Kind::kString) {
          diags.Error(site.At(k), fmt::format("keys of {} must be str, got {}", what, Got(k)), site.source_line);
          ok = false;
          continue;
        }
        ok &= CheckType(type.element(), v, fmt::format("{}[{}]", what, k.Repr()), site, diags);
      }
      return ok;
    }
  }
  return false;
}

bool IsName(const TypeExpr& a, const char* upper, const char* lower) { return a.name == upper || a.name == lower; }

bool ScalarAnnotation(const TypeExpr& a, const char* name) { return a.name == name && a.args.empty(); }

bool IsNumber(const Value& v) { return v.kind() == Value::Kind::kInt || v.kind() == Value::Kind::kFloat; }

// Offset of the first byte of `s` that is not part of well-formed UTF-8 (RFC 3629: no overlong
// forms, no surrogates, at most U+10FFFF), or npos.
std::size_t InvalidUtf8At(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + n >= s.size()) return i;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if (d < (k == 1 ? lo : 0x80u) || d > (k == 1 ? hi : 0xBFu)) return i;
    }
    i += n + 1;
  }
  return std::string::npos;
}

// Strings must be valid UTF-8 without NUL bytes: they are printed, stored in the experiment
// database and written as JSON, and a NUL would silently cut a path.
bool CheckText(const Value& value, const std::string& what, const Site& site, Diagnostics& diags) {
  const std::string& s = value.as_string();
  if (const std::size_t at = InvalidUtf8At(s); at != std::string::npos) {
    diags.Error(site.At(value),
                fmt::format("{}: the text is not valid UTF-8 (byte {:#04x} at offset {})", what,
                            static_cast<unsigned char>(s[at]), at),
                site.source_line);
    return false;
  }
  if (const std::size_t at = s.find('\0'); at != std::string::npos) {
    diags.Error(site.At(value), fmt::format("{}: the text contains a NUL byte at offset {}", what, at),
                site.source_line);
    return false;
  }
  return true;
}

// Range and choice checks on every scalar inside a value.
bool CheckScalars(const Field& field, const Value& value, const std::string& what, const Site& site,
                  Diagnostics& diags) {
  if (value.is_sequence()) {
    bool ok = true;
    for (std::size_t i = 0; i < value.items().size(); ++i) {
      ok &= CheckScalars(field, value.items()[i], fmt::format("{}[{}]", what, i), site, diags);
    }
    return ok;
  }
  if (value.kind() == Value::Kind::kDict) {
    bool ok = true;
    for (const auto& [k, v] : value.entries()) {
      if (k.kind() == Value::Kind::kString && !CheckText(k, what + " key", site, diags)) {
        ok = false;
        continue;
      }
      ok &= CheckScalars(field, v, fmt::format("{}[{}]", what, k.Repr()), site, diags);
    }
    return ok;
  }
  if (IsNumber(value)) {
    const double x = value.as_float();
    const bool below = field.min && (field.min_exclusive ? x <= *field.min : x < *field.min);
    const bool above = field.max && (field.max_exclusive ? x >= *field.max : x > *field.max);
    if (below || above) {
      diags.Error(site.At(value), fmt::format("{} must be {}, got {}", what, field.RangeText(), value.Repr()),
                  site.source_line);
      return false;
    }
    return true;
  }
  if (value.kind() == Value::Kind::kString) {
    if (!CheckText(value, what, site, diags)) return false;
    const std::string& s = value.as_string();
    if (std::find(field.unsupported.begin(), field.unsupported.end(), s) != field.unsupported.end()) {
      diags.Error(site.At(value), fmt::format("{} {} is not supported: {}", what, value.Repr(), field.unsupported_reason),
                  site.source_line);
      return false;
    }
    if (!field.choices.empty() && std::find(field.choices.begin(), field.choices.end(), s) == field.choices.end()) {
      std::vector<std::string> quoted;
      for (const auto& c : field.choices) quoted.push_back(Value::String(c).Repr());
      std::string message = fmt::format("{} must be one of {}, got {}", what, fmt::join(quoted, ", "), value.Repr());
      std::vector<std::string> candidates;
      for (const auto& c : field.choices) {
        if (!c.empty()) candidates.push_back(c);
      }
      if (auto close = s.empty() ? std::nullopt : text::ClosestMatch(s, candidates)) {
        message += fmt::format(" (did you mean '{}'?)", *close);
      }
      diags.Error(site.At(value), message, site.source_line);
      return false;
    }
  }
  return true;
}

}  // namespace

std::string TypeDesc::ToString() const {
  switch (kind) {
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kOptional: return "Optional[" + element().ToString() + "]";
    case Kind::kList: return "List[" + element().ToString() + "]";
    case Kind::kTuple: return "Tuple[" + element().ToString() + ", ...]";
    case Kind::kDict: return "Dict[str, " + element().ToString() + "]";
  }
  return "?";
}

bool CheckType(const TypeDesc& type, const Value& value, const std::string& what, const Site& site,
               Diagnostics& diags) {
  return CheckTypeAs(type, value, what, type.ToString(), site, diags);
}

bool AnnotationAgrees(const TypeExpr& a, const TypeDesc& type) {
  if (type.kind == Kind::kOptional) {
    if (a.name == "Optional") return a.args.size() == 1 && AnnotationAgrees(a.args[0], type.element());
    return AnnotationAgrees(a, type.element());
  }
  switch (type.kind) {
    case Kind::kBool: return ScalarAnnotation(a, "bool");
    case Kind::kInt: return ScalarAnnotation(a, "int");
    case Kind::kFloat: return ScalarAnnotation(a, "float");
    case Kind::kString: return ScalarAnnotation(a, "str");
    case Kind::kList:
      return IsName(a, "List", "list") &&
             (a.args.empty() || (a.args.size() == 1 && AnnotationAgrees(a.args[0], type.element())));
    case Kind::kTuple: {
      if (!IsName(a, "Tuple", "tuple")) return false;
      if (a.args.size() == 2 && a.args[1].name == "...") return AnnotationAgrees(a.args[0], type.element());
      return std::all_of(a.args.begin(), a.args.end(),
                         [&](const TypeExpr& arg) { return AnnotationAgrees(arg, type.element()); });
    }
    case Kind::kDict:
      return IsName(a, "Dict", "dict") &&
             (a.args.empty() ||
              (a.args.size() == 2 && ScalarAnnotation(a.args[0], "str") && AnnotationAgrees(a.args[1], type.element())));
    case Kind::kOptional: break;
  }
  return false;
}

bool MatchesAnnotation(const TypeExpr& a, const Value& v) {
  if (a.name == "Optional") return a.args.size() == 1 && (v.is_none() || MatchesAnnotation(a.args[0], v));
  if (a.name == "None") return v.is_none();
  if (a.name == "bool") return v.kind() == Value::Kind::kBool;
  if (a.name == "int") return v.kind() == Value::Kind::kInt;
  if (a.name == "float") return IsNumber(v);
  if (a.name == "str") return v.kind() == Value::Kind::kString;
  const auto all_items = [&](const TypeExpr& elem) {
    return std::all_of(v.items().begin(), v.items().end(), [&](const Value& x) { return MatchesAnnotation(elem, x); });
  };
  if (IsName(a, "List", "list")) {
    if (v.kind() != Value::Kind::kList) return false;
    return a.args.empty() || (a.args.size() == 1 && all_items(a.args[0]));
  }
  if (IsName(a, "Tuple", "tuple")) {
    if (v.kind() != Value::Kind::kTuple) return false;
    if (a.args.empty()) return true;
    if (a.args.size() == 1) return all_items(a.args[0]);
    if (a.args.size() == 2 && a.args[1].name == "...") return all_items(a.args[0]);
    if (a.args.size() != v.items().size()) return false;
    for (std::size_t i = 0; i < a.args.size(); ++i) {
      if (!MatchesAnnotation(a.args[i], v.items()[i])) return false;
    }
    return true;
  }
  if (IsName(a, "Dict", "dict")) {
    if (v.kind() != Value::Kind::kDict) return false;
    if (a.args.empty()) return true;
    if (a.args.size() != 2) return false;
    return std::all_of(v.entries().begin(), v.entries().end(), [&](const auto& e) {
      return MatchesAnnotation(a.args[0], e.first) && MatchesAnnotation(a.args[1], e.second);
    });
  }
  return false;
}

bool CheckConstraints(const Field& field, const Value& value, const Site& site, Diagnostics& diags) {
  const std::string what = field.key();
  bool ok = CheckScalars(field, value, what, site, diags);
  if (!ok) return false;
  for (const auto& check : field.checks) {
    if (auto message = check(value)) {
      diags.Error(site.At(value), *message, site.source_line);
      ok = false;
    }
  }
  return ok;
}

bool CheckAssignment(const Field& field, const TypeExpr* annotation, const Value& value, const Site& site,
                     Diagnostics& diags) {
  bool annotation_ok = true;
  if (annotation != nullptr && !AnnotationAgrees(*annotation, field.type)) {
    diags.Error(annotation->pos.has_line() ? annotation->pos : site.pos,
                fmt::format("annotation '{}' contradicts the type of {} ({})", annotation->ToString(), field.key(),
                            field.type.ToString()),
                site.source_line);
    annotation_ok = false;
  }
  if (!CheckType(field.type, value, field.key(), site, diags)) return false;
  if (annotation != nullptr && annotation_ok && !MatchesAnnotation(*annotation, value)) {
    diags.Error(site.At(value),
                fmt::format("value {} of {} does not match its annotation '{}'", value.Repr(), field.key(),
                            annotation->ToString()),
                site.source_line);
    return false;
  }
  return CheckConstraints(field, value, site, diags) && annotation_ok;
}

}  // namespace asv::settings
