// Logging on fmt: levels, an optional rank prefix, and rank-0-only variants.
//
//   ASV_LOG(Info, "resolved {} configs", n);
//   ASV_LOG0(Info, "epoch {} done", epoch);   // printed by global rank 0 only
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace asv::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
constexpr Level Debug = Level::kDebug;
constexpr Level Info = Level::kInfo;
constexpr Level Warning = Level::kWarning;
constexpr Level Error = Level::kError;

/// Messages below this level are dropped. Default Info; ASV_LOG_LEVEL=debug|info|warning|error.
void SetLevel(Level level);
Level GetLevel();
/// Sets the global rank and world size shown in the prefix when world size > 1.
void SetRank(int rank, int world_size);
int Rank();

/// Writes one line to stderr: "[asvcpp I 12:00:01 r1] message". Thread-safe.
void Write(Level level, std::string_view message);

}  // namespace asv::log

#define ASV_LOG(level, ...)                                                              \
  do {                                                                                   \
    if (::asv::log::level >= ::asv::log::GetLevel())                                     \
      ::asv::log::Write(::asv::log::level, ::fmt::format(__VA_ARGS__));                  \
  } while (false)

#define ASV_LOG0(level, ...)                                                             \
  do {                                                                                   \
    if (::asv::log::Rank() == 0) ASV_LOG(level, __VA_ARGS__);                            \
  } while (false)
