// Plain-text tables for asvrun's listings: left-aligned columns separated by two spaces.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace asv::tools {

/// Cells wider than this do not widen their column: the next cell follows two spaces after them.
inline constexpr std::size_t kMaxColumnWidth = 100;

/// Renders `header` and `rows` as aligned columns; every row must have header.size() cells.
/// Each column is as wide as its widest cell up to kMaxColumnWidth, so that one huge cell (a
/// config with thousands of parents) does not pad every other row. Time linear in the output.
std::string FormatTable(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

/// Renders rows as CSV (RFC 4180 quoting) with a header line.
std::string FormatCsv(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows);

}  // namespace asv::tools
