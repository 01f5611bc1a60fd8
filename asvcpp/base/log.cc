#include "asvcpp/base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>

#include "asvcpp/base/live_line.h"

namespace asv::log {
namespace {

Level InitialLevel() {
  const char* env = std::getenv("ASV_LOG_LEVEL");
  if (env == nullptr) return Level::kInfo;
  const std::string v(env);
  if (v == "debug") return Level::kDebug;
  if (v == "warning") return Level::kWarning;
  if (v == "error") return Level::kError;
  return Level::kInfo;
}

std::atomic<int> g_level{static_cast<int>(InitialLevel())};
std::atomic<int> g_rank{0};
std::atomic<int> g_world_size{1};
std::mutex g_mutex;

}  // namespace

void SetLevel(Level level) { g_level = static_cast<int>(level); }
Level GetLevel() { return static_cast<Level>(g_level.load()); }
void SetRank(int rank, int world_size) {
  g_rank = rank;
  g_world_size = world_size;
}
int Rank() { return g_rank.load(); }

void Write(Level level, std::string_view message) {
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char clock[16];
  std::strftime(clock, sizeof clock, "%H:%M:%S", &tm);
  std::string line = g_world_size.load() > 1
                         ? fmt::format("[asvcpp {} {} r{}] {}\n", kLetters[static_cast<int>(level)],
                                       clock, g_rank.load(), message)
                         : fmt::format("[asvcpp {} {}] {}\n", kLetters[static_cast<int>(level)],
                                       clock, message);
  // A live progress line has no newline yet: clear it so that this line starts at the margin.
  if (base::internal::LiveLineShown()) line.insert(0, "\r\033[K");
  std::lock_guard<std::mutex> lock(g_mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace asv::log
