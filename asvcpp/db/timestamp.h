// UTC timestamps as stored in the experiment database.
//
// Every time column (start_time, end_time, heartbeat_time, recorded_time) holds UTC ISO-8601 text
// with milliseconds and a 'Z' suffix, e.g. "2024-05-01T13:45:07.123Z". The fixed width makes
// lexicographic order equal to chronological order, so SQL comparisons and ORDER BY work on the
// text, and `sqlite3` users can read the values as they are.
#pragma once

#include <chrono>
#include <string>

namespace asv::db {

/// Formats `t` as "YYYY-MM-DDTHH:MM:SS.mmmZ" (UTC, milliseconds truncated).
std::string FormatUtc(std::chrono::system_clock::time_point t);

/// FormatUtc(std::chrono::system_clock::now()).
std::string NowUtc();

}  // namespace asv::db
