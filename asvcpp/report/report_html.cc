#include "asvcpp/report/report_html.h"

#include <fmt/format.h>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"

namespace asv::report {
namespace {

// Replaces the one occurrence of `marker` in `page` by `text`. Throws std::logic_error when the
// template lacks it (a broken build).
void Fill(std::string& page, std::string_view marker, const std::string& text) {
  const auto at = page.find(marker);
  if (at == std::string::npos) throw std::logic_error(fmt::format("report page template lacks {}", marker));
  page.replace(at, marker.size(), text);
}

std::string EscapeHtml(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string RenderReportHtml(const nlohmann::ordered_json& data, const std::string& title) {
  // '<' only occurs inside JSON strings, where \u003c means the same: no "</script>" or "<!--"
  // in the data can end or confuse the script element that holds it.
  std::string json;
  const std::string dumped = data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  json.reserve(dumped.size());
  for (char c : dumped) {
    if (c == '<') {
      json += "\\u003c";
    } else {
      json += c;
    }
  }
  // The template holds the title, Chart.js and the data in this order; filling them last to first
  // means that each search finds the template's placeholder, never one in text inserted before.
  std::string page = PageTemplate();
  Fill(page, "@ASV_DATA@", json);
  Fill(page, "@ASV_CHART_JS@", ChartJs());
  Fill(page, "@ASV_TITLE@", EscapeHtml(title));
  return page;
}

std::size_t WriteReport(db::Database& database, const ReportOptions& options, const std::filesystem::path& out) {
  const std::string page = RenderReportHtml(BuildReportData(database, options), options.title);
  fs::WriteFileAtomic(out, page);
  return page.size();
}

}  // namespace asv::report
