#include "asvcpp/settings/name_checks.h"

#include <fmt/format.h>

#include <stdexcept>
#include <utility>
#include <vector>

namespace asv::settings {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '+' || c == '.';
}

// Collects the strings of `value` that hold names.
void CollectNames(const parser::Value& value, NamesIn where, std::vector<const parser::Value*>& out) {
  switch (value.kind()) {
    case parser::Value::Kind::kString:
      if (where == NamesIn::kStrings) out.push_back(&value);
      break;
    case parser::Value::Kind::kTuple:
    case parser::Value::Kind::kList:
      for (const auto& item : value.items()) CollectNames(item, where, out);
      break;
    case parser::Value::Kind::kDict:
      for (const auto& [k, v] : value.entries()) {
        if (k.kind() == parser::Value::Kind::kString) out.push_back(&k);
        if (where == NamesIn::kDictKeysAndValues && v.kind() == parser::Value::Kind::kString) out.push_back(&v);
      }
      break;
    default:
      break;
  }
}

std::optional<std::string> PathTextProblem(std::string_view path, bool kaldi_specifier, bool non_empty) {
  if (non_empty && path.empty()) return std::string("must not be empty");
  for (const char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return fmt::format("contains the control character {:#04x}{}; paths must not", u,
                         c == '\n' ? " (newline)" : c == '\0' ? " (NUL)" : c == '\t' ? " (tab)" : "");
    }
    if (kaldi_specifier && c == ',') {
      return std::string(
          "contains ',', which splits the Kaldi wspecifiers ('ark,scp:ARCHIVE,SCRIPT') that outputs under it are "
          "written with; choose a folder name without ','");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> PlainNameProblem(std::string_view name) {
  if (name.empty()) return std::string("it is empty");
  if (name.size() > 255) return fmt::format("it is {} bytes long, more than 255", name.size());
  if (name.front() == '.') return std::string("it starts with '.'");
  for (const char c : name) {
    if (!IsNameChar(c)) {
      const auto u = static_cast<unsigned char>(c);
      return u < 0x20 || u >= 0x7f ? fmt::format("it contains the byte {:#04x}", u)
                                   : fmt::format("it contains '{}'", c);
    }
  }
  return std::nullopt;
}

Field::CheckFn PlainNames(std::string key, std::string what, NamesIn where) {
  return [key = std::move(key), what = std::move(what), where](const parser::Value& value) -> std::optional<std::string> {
    std::vector<const parser::Value*> names;
    CollectNames(value, where, names);
    for (const parser::Value* name : names) {
      if (auto problem = PlainNameProblem(name->as_string())) {
        return fmt::format(
            "{}: {} {} is not a plain name: {}; it becomes a file or folder name under paths.output_folder, so it may "
            "hold only letters, digits, '_', '-', '+' and '.' (not first)",
            key, what, name->Repr(), *problem);
      }
    }
    return std::nullopt;
  };
}

Field::CheckFn PathText(std::string key, bool kaldi_specifier, bool non_empty) {
  return [key = std::move(key), kaldi_specifier, non_empty](const parser::Value& value) -> std::optional<std::string> {
    std::vector<const parser::Value*> paths;
    if (value.kind() == parser::Value::Kind::kString) {
      paths.push_back(&value);
    } else if (value.kind() == parser::Value::Kind::kDict) {
      for (const auto& [k, v] : value.entries()) {
        if (v.kind() == parser::Value::Kind::kString) paths.push_back(&v);
      }
    }
    for (const parser::Value* path : paths) {
      if (auto problem = PathTextProblem(path->as_string(), kaldi_specifier, non_empty)) {
        return fmt::format("{} {} {}", key, path->Repr(), *problem);
      }
    }
    return std::nullopt;
  };
}

void AddPathChecks(SettingsTree& tree) {
  Group* paths = tree.FindGroup("paths");
  if (paths == nullptr) throw std::logic_error("AddPathChecks: the settings tree has no paths group");
  for (Field& field : paths->fields) {
    const bool output = field.name == "output_folder";
    const bool specifier = output || field.name == "feature_and_list_folder" || field.name == "system_folder";
    field.Check(PathText(field.key(), specifier, output));
  }
  if (Field* datasets = paths->Find("datasets")) {
    datasets->Check(PlainNames(datasets->key(), "dataset name", NamesIn::kDictKeys));
  }
}

}  // namespace asv::settings
