#include "asvcpp/base/progress.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>
#include <unistd.h>

#include "asvcpp/base/log.h"

namespace asv::base {
namespace {

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

Progress::Progress(std::string label, std::int64_t total, ProgressOptions options)
    : label_(std::move(label)), total_(total), options_(std::move(options)) {
  if (!options_.clock) options_.clock = SteadySeconds;
  if (options_.mode == ProgressMode::kAuto) {
    options_.mode = ::isatty(STDERR_FILENO) ? ProgressMode::kLive : ProgressMode::kLog;
  }
  live_ = options_.mode == ProgressMode::kLive;
  start_ = options_.clock();
  last_output_ = start_;
}

Progress::~Progress() {
  try {
    Finish();
  } catch (...) {  // a destructor must not throw; the report is cosmetic
  }
}

std::string Progress::FormatCount(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

std::string Progress::FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto total = static_cast<std::int64_t>(std::llround(seconds));
  const std::int64_t h = total / 3600;
  const std::int64_t m = (total / 60) % 60;
  const std::int64_t s = total % 60;
  return h > 0 ? fmt::format("{}:{:02d}:{:02d}", h, m, s) : fmt::format("{}:{:02d}", m, s);
}

std::string Progress::LineLocked(double now) const {
  const double elapsed = now - start_;
  std::string line = fmt::format("{}: {}", label_, FormatCount(done_));
  if (total_ > 0) {
    line += fmt::format("/{} {} ({:.1f}%)", FormatCount(total_), options_.unit,
                        100.0 * static_cast<double>(done_) / static_cast<double>(total_));
  } else {
    line += " " + options_.unit;
  }
  if (elapsed > 0) {
    line += fmt::format(", {:.1f} {}/s", static_cast<double>(done_) / elapsed, options_.unit);
    if (!options_.amount_rate_suffix.empty()) {
      line += fmt::format(", {:.1f}{}", amount_ / elapsed, options_.amount_rate_suffix);
    }
  }
  line += ", elapsed " + FormatDuration(elapsed);
  if (total_ > 0 && done_ < total_) {
    const double eta =
        done_ > 0 ? elapsed * static_cast<double>(total_ - done_) / static_cast<double>(done_) : std::nan("");
    line += ", ETA " + FormatDuration(eta);
  }
  return line;
}

void Progress::Emit(const std::string& line, bool final_line) {
  if (options_.sink) {
    options_.sink(line);
    return;
  }
  if (live_) {
    // "\r" + clear to end of line keeps one line on the terminal; the newline comes at Finish.
    const std::string text = "\r" + line + "\033[K" + (final_line ? "\n" : "");
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  } else {
    ASV_LOG(Info, "{}", line);
  }
}

void Progress::Add(std::int64_t n, double amount) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_ += n;
  amount_ += amount;
  if (finished_ || options_.mode == ProgressMode::kSilent) return;
  const double now = options_.clock();
  const double interval = live_ ? options_.redraw_interval_s : options_.log_interval_s;
  if (now - last_output_ < interval) return;
  last_output_ = now;
  // Emitting under the lock keeps lines in order; output is rare (interval-limited).
  Emit(LineLocked(now), false);
}

void Progress::Finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (finished_) return;
  finished_ = true;
  if (live_) Emit(LineLocked(options_.clock()), true);
}

std::string Progress::Line() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return LineLocked(options_.clock());
}

std::int64_t Progress::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

double Progress::elapsed() const {
  return options_.clock() - start_;
}

}  // namespace asv::base
