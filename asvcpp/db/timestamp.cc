#include "asvcpp/db/timestamp.h"

#include <fmt/format.h>

#include <ctime>

namespace asv::db {

std::string FormatUtc(std::chrono::system_clock::time_point t) {
  using namespace std::chrono;
  const auto ms = duration_cast<milliseconds>(t.time_since_epoch()).count();
  // Floor division so that times before 1970 still format correctly.
  std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  long long millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    --seconds;
  }
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
}

std::string NowUtc() { return FormatUtc(std::chrono::system_clock::now()); }

}  // namespace asv::db
