#include "tools/asvrun/table.h"

#include <algorithm>

namespace asv::tools {

std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size());
  const auto shown_width = [](const std::string& cell) { return std::min(cell.size(), kMaxColumnWidth); };
  for (std::size_t c = 0; c < header.size(); ++c) width[c] = shown_width(header[c]);
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], shown_width(row[c]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      out += cells[c];
      if (c + 1 < cells.size()) out.append(width[c] + 2 - std::min(cells[c].size(), width[c]), ' ');
    }
    out.resize(out.find_last_not_of(' ') + 1);  // npos + 1 == 0: a line of spaces becomes empty.
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

std::string FormatCsv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  auto cell = [](const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) {
      if (c == '"') q += '"';
      q += c;
    }
    return q + "\"";
  };
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) out += (c > 0 ? "," : "") + cell(cells[c]);
    return out + "\n";
  };
  std::string out = line(header);
  for (const auto& row : rows) out += line(row);
  return out;
}

}  // namespace asv::tools
