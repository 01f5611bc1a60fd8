// asvrun report's page: one self-contained HTML file holding the report's data (report_data.h)
// as JSON, the page's script that builds tables and charts from it, and Chart.js 3 (Debian's
// libjs-chart.js, inlined at build time). A Content-Security-Policy forbids every network load
// (default-src 'none'; inline scripts and styles and data: images only), so opening the page
// never reaches out.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "asvcpp/db/database.h"
#include "asvcpp/report/report_data.h"

namespace asv::report {

/// Chart.js as inlined at build time (chart.min.js).
const std::string& ChartJs();

/// The page (report_page.html) with its placeholders for the title, the data and Chart.js.
const std::string& PageTemplate();

/// The page for `data` (BuildReportData's object, embedded with every '<' escaped so that no
/// string in it can end the script element) titled `title`.
std::string RenderReportHtml(const nlohmann::ordered_json& data, const std::string& title);

/// BuildReportData and RenderReportHtml, written to `out` atomically (a temporary name in the same
/// folder, then renamed; parent folders created). Returns the page's size in bytes. Throws DbError
/// for the database and DataError naming `out` when it cannot be written.
std::size_t WriteReport(db::Database& database, const ReportOptions& options, const std::filesystem::path& out);

}  // namespace asv::report
