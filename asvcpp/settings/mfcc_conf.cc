#include "asvcpp/settings/mfcc_conf.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "asvcpp/base/error.h"
#include "asvcpp/base/text.h"

namespace asv::settings {

std::optional<int> ParseSampleFrequency(const std::string& text, const std::string& path) {
  std::optional<int> result;
  std::istringstream in(text);
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.erase(hash);
    const std::string option(text::Trim(line));
    if (option.size() < 2 || option.compare(0, 2, "--") != 0) continue;
    const auto eq = option.find('=');
    std::string name = option.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    for (char& c : name) {
      if (c == '_') c = '-';
    }
    if (name != "sample-frequency") continue;
    const std::string value = eq == std::string::npos ? "" : std::string(text::Trim(option.substr(eq + 1)));
    errno = 0;
    char* end = nullptr;
    const double hz = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || errno != 0 || !(hz > 0) || hz != std::floor(hz) || hz > 1e9) {
      throw ConfigError(fmt::format("{}:{}: --sample-frequency='{}' is not a positive whole number of Hz", path,
                                    line_number, value));
    }
    result = static_cast<int>(hz);
  }
  return result;
}

std::optional<int> ReadSampleFrequency(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read MFCC options file {}", path));
  std::ostringstream text;
  text << in.rdbuf();
  return ParseSampleFrequency(text.str(), path);
}

}  // namespace asv::settings
