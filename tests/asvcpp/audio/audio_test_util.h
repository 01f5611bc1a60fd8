// Helpers for the audio tests: temporary folders and tiny generated audio files.
#pragma once

#include <sndfile.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace asv::audio::testing {

/// A fresh folder under the system temporary directory, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("asv_audio_test_" + std::to_string(::getpid()) + "_" + name)) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

/// int16 sine wave samples: amplitude `amp`, `hz` Hz, `n` samples at `rate` Hz.
inline std::vector<short> Sine(std::size_t n, double hz, int rate, double amp = 10000.0) {
  std::vector<short> s(n);
  for (std::size_t i = 0; i < n; ++i) {
    s[i] = static_cast<short>(std::lround(amp * std::sin(2.0 * M_PI * hz * static_cast<double>(i) / rate)));
  }
  return s;
}

/// Writes interleaved int16 frames with libsndfile in the given format (e.g. SF_FORMAT_FLAC |
/// SF_FORMAT_PCM_16). Returns false on failure.
inline bool WriteShorts(const std::filesystem::path& path, const std::vector<short>& interleaved,
                        int channels, int rate, int format = SF_FORMAT_WAV | SF_FORMAT_PCM_16) {
  SF_INFO info{};
  info.samplerate = rate;
  info.channels = channels;
  info.format = format;
  SNDFILE* f = sf_open(path.c_str(), SFM_WRITE, &info);
  if (!f) return false;
  const sf_count_t frames = static_cast<sf_count_t>(interleaved.size()) / channels;
  const bool ok = sf_writef_short(f, interleaved.data(), frames) == frames;
  sf_close(f);
  return ok;
}

/// True when `program` is found in PATH.
inline bool HaveProgram(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

}  // namespace asv::audio::testing
