// Plain-text tables for asvrun's listings: left-aligned columns separated by two spaces.
#pragma once

#include <string>
#include <vector>

namespace asv::tools {

/// Renders `header` and `rows` as aligned columns; every row must have header.size() cells.
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// Renders rows as CSV (RFC 4180 quoting) with a header line.
std::string FormatCsv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace asv::tools
