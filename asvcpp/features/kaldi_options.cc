#include "asvcpp/features/kaldi_options.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/text.h"

namespace asv::features {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ParseBool(std::string_view value, const std::string& where, const std::string& name) {
  const std::string v = Lower(value);
  if (v == "true" || v == "t" || v == "1" || v.empty()) return true;
  if (v == "false" || v == "f" || v == "0") return false;
  throw DataError(fmt::format("{}: option --{}: expected true or false, got '{}'", where, name, value));
}

std::int32_t ParseInt(std::string_view value, const std::string& where, const std::string& name) {
  const std::string v(value);
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || x < INT32_MIN || x > INT32_MAX) {
    throw DataError(fmt::format("{}: option --{}: expected an integer, got '{}'", where, name, value));
  }
  return static_cast<std::int32_t>(x);
}

float ParseFloat(std::string_view value, const std::string& where, const std::string& name) {
  const std::string v(value);
  char* end = nullptr;
  errno = 0;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || !std::isfinite(x)) {
    throw DataError(fmt::format("{}: option --{}: expected a number, got '{}'", where, name, value));
  }
  return static_cast<float>(x);
}

}  // namespace

std::string KaldiOptions::NormalizeName(std::string_view name) {
  std::string out = Lower(name);
  for (char& c : out) {
    if (c == '_') c = '-';
  }
  return out;
}

void KaldiOptions::Register(const std::string& name, bool* value, const std::string& help) {
  if (!entries_.emplace(NormalizeName(name), Entry{value, help}).second)
    throw std::logic_error("option registered twice: --" + name);
}
void KaldiOptions::Register(const std::string& name, std::int32_t* value, const std::string& help) {
  if (!entries_.emplace(NormalizeName(name), Entry{value, help}).second)
    throw std::logic_error("option registered twice: --" + name);
}
void KaldiOptions::Register(const std::string& name, float* value, const std::string& help) {
  if (!entries_.emplace(NormalizeName(name), Entry{value, help}).second)
    throw std::logic_error("option registered twice: --" + name);
}
void KaldiOptions::Register(const std::string& name, std::string* value, const std::string& help) {
  if (!entries_.emplace(NormalizeName(name), Entry{value, help}).second)
    throw std::logic_error("option registered twice: --" + name);
}

void KaldiOptions::Set(std::string_view raw_name, std::string_view value, bool has_value, const std::string& where) {
  const std::string name = NormalizeName(raw_name);
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    std::string known;
    for (const auto& [key, entry] : entries_) known += (known.empty() ? "--" : ", --") + key;
    throw DataError(fmt::format("{}: unknown option --{} (known options: {})", where, name, known));
  }
  std::visit(
      [&](auto* target) {
        using T = std::remove_pointer_t<decltype(target)>;
        if constexpr (std::is_same_v<T, bool>) {
          if (has_value && value.empty())
            throw DataError(fmt::format("{}: option --{}= has an empty value", where, name));
          *target = ParseBool(value, where, name);
        } else {
          if (!has_value) throw DataError(fmt::format("{}: option --{} needs a value (--{}=VALUE)", where, name, name));
          if constexpr (std::is_same_v<T, std::int32_t>) {
            *target = ParseInt(value, where, name);
          } else if constexpr (std::is_same_v<T, float>) {
            *target = ParseFloat(value, where, name);
          } else {
            *target = std::string(value);
          }
        }
      },
      it->second.target);
}

void KaldiOptions::ParseConfigText(std::string_view text, const std::string& path) {
  int line_number = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = text::Trim(line);
    if (line.empty()) continue;
    const std::string where = fmt::format("{}:{}", path, line_number);
    if (line.substr(0, 2) != "--") {
      throw DataError(fmt::format("{}: expected an option of the form --name=value, got '{}'", where, line));
    }
    const std::size_t eq = line.find('=');
    if (eq == 2) throw DataError(fmt::format("{}: option without a name: '{}'", where, line));
    if (eq == std::string_view::npos) {
      Set(line.substr(2), {}, false, where);
    } else {
      Set(text::Trim(line.substr(2, eq - 2)), text::Trim(line.substr(eq + 1)), true, where);
    }
  }
}

void KaldiOptions::ReadConfigFile(const std::string& path) {
  ParseConfigText(fs::ReadFile(path), path);
}

std::string KaldiOptions::Help() const {
  std::string out;
  for (const auto& [name, entry] : entries_) {
    std::visit(
        [&](auto* target) {
          using T = std::remove_pointer_t<decltype(target)>;
          if constexpr (std::is_same_v<T, bool>) {
            out += fmt::format("  --{} : {} (bool, default = {})\n", name, entry.help, *target ? "true" : "false");
          } else if constexpr (std::is_same_v<T, std::int32_t>) {
            out += fmt::format("  --{} : {} (int, default = {})\n", name, entry.help, *target);
          } else if constexpr (std::is_same_v<T, float>) {
            out += fmt::format("  --{} : {} (float, default = {})\n", name, entry.help, *target);
          } else {
            out += fmt::format("  --{} : {} (string, default = \"{}\")\n", name, entry.help, *target);
          }
        },
        entry.target);
  }
  return out;
}

}  // namespace asv::features
