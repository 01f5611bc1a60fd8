#include "asvcpp/audio/decode.h"

#include <fmt/format.h>
#include <sndfile.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>

#include "asvcpp/audio/decode_libav.h"
#include "asvcpp/audio/resample.h"
#include "asvcpp/audio/subprocess.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/temp_files.h"

namespace asv::audio {
namespace {

namespace stdfs = std::filesystem;

constexpr float kInt16Scale = 32768.0f;
// Largest sample magnitude accepted (int16 value range): 1024 times full scale (+60 dBFS). Float
// files may exceed full scale a little; values this large only come from corrupt data, and their
// squares would overflow the MFCC's float energies.
constexpr float kMaxSampleMagnitude = 1024.0f * kInt16Scale;
constexpr sf_count_t kChunkFrames = 65536;

constexpr std::array<std::string_view, 9> kLibavExtensions = {
    ".m4a", ".aac", ".mp4", ".m4b", ".webm", ".mkv", ".wma", ".3gp", ".amr"};

struct SndfileCloser {
  void operator()(SNDFILE* f) const { sf_close(f); }
};
using SndfilePtr = std::unique_ptr<SNDFILE, SndfileCloser>;

// libsndfile virtual I/O over a byte buffer (a decoded pipe's output).
struct MemoryFile {
  const std::string* bytes;
  sf_count_t pos = 0;
};

sf_count_t MemLength(void* user) {
  return static_cast<sf_count_t>(static_cast<MemoryFile*>(user)->bytes->size());
}
sf_count_t MemSeek(sf_count_t offset, int whence, void* user) {
  auto* m = static_cast<MemoryFile*>(user);
  const auto size = static_cast<sf_count_t>(m->bytes->size());
  sf_count_t target = offset;
  if (whence == SEEK_CUR) target = m->pos + offset;
  if (whence == SEEK_END) target = size + offset;
  m->pos = std::clamp<sf_count_t>(target, 0, size);
  return m->pos;
}
sf_count_t MemRead(void* dst, sf_count_t count, void* user) {
  auto* m = static_cast<MemoryFile*>(user);
  const auto size = static_cast<sf_count_t>(m->bytes->size());
  const sf_count_t n = std::max<sf_count_t>(0, std::min(count, size - m->pos));
  if (n > 0) std::memcpy(dst, m->bytes->data() + m->pos, static_cast<std::size_t>(n));
  m->pos += n;
  return n;
}
sf_count_t MemWrite(const void*, sf_count_t, void*) { return 0; }
sf_count_t MemTell(void* user) { return static_cast<MemoryFile*>(user)->pos; }

std::string LowerExtension(const stdfs::path& path) {
  std::string ext = path.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

std::uint32_t Le32(const unsigned char* p) {
  return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
         (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// libsndfile silently shortens a WAV whose data chunk claims more bytes than the file holds;
// Kaldi treats that as a truncated file and so do we. Streamed headers (0 or 0xFFFFFFFF, the
// values written to pipes) are not checked.
void CheckWavNotTruncated(const stdfs::path& path, std::uintmax_t file_size) {
  std::ifstream in(path, std::ios::binary);
  unsigned char header[12];
  if (!in.read(reinterpret_cast<char*>(header), 12)) return;
  if (std::memcmp(header, "RIFF", 4) != 0 || std::memcmp(header + 8, "WAVE", 4) != 0) return;
  std::uintmax_t offset = 12;
  unsigned char chunk[8];
  while (in.read(reinterpret_cast<char*>(chunk), 8)) {
    offset += 8;
    const std::uint32_t size = Le32(chunk + 4);
    if (std::memcmp(chunk, "data", 4) == 0) {
      if (size != 0 && size != 0xFFFFFFFFu && offset + size > file_size) {
        throw DataError(fmt::format(
            "{}: truncated WAV file: the header announces {} bytes of audio data but only {} "
            "are present",
            path.string(), size, file_size - offset));
      }
      return;
    }
    offset += size + (size & 1u);
    if (offset >= file_size) return;  // Malformed chunk list: libsndfile will judge it.
    in.seekg(static_cast<std::streamoff>(offset));
  }
}

// Cuts `audio` to options.max_samples (when set).
void TruncateTo(const DecodeOptions& options, Audio& audio) {
  if (options.max_samples > 0 && audio.samples.size() > options.max_samples) {
    audio.samples.resize(options.max_samples);
  }
}

}  // namespace

std::int64_t SourceFramesNeeded(const DecodeOptions& options, int source_rate) {
  if (options.max_samples == 0) return -1;
  const double needed = static_cast<double>(options.max_samples) * source_rate / options.sample_rate;
  const double margin = source_rate == options.sample_rate ? 0.0 : 0.05 * source_rate;
  return static_cast<std::int64_t>(std::ceil(needed + margin));
}

void CheckSampleValues(const std::vector<float>& mono, int source_rate, const std::string& what) {
  for (std::size_t i = 0; i < mono.size(); ++i) {
    const float v = mono[i];
    if (!std::isfinite(v)) {
      throw DataError(fmt::format("{}: sample {} (at {:.3f} s) is {}; the file is corrupt", what, i,
                                  static_cast<double>(i) / source_rate, std::isnan(v) ? "NaN" : "infinite"));
    }
    if (std::fabs(v) > kMaxSampleMagnitude) {
      throw DataError(fmt::format("{}: sample {} (at {:.3f} s) is {:g}, more than 1024 times full scale; the file is "
                                  "corrupt",
                                  what, i, static_cast<double>(i) / source_rate, v / kInt16Scale));
    }
  }
}

Audio FinishAudio(std::vector<float> mono, int source_rate, int source_channels, const std::string& what,
                  const DecodeOptions& options) {
  if (mono.empty()) throw DataError(fmt::format("{}: contains no audio samples", what));
  CheckSampleValues(mono, source_rate, what);
  Audio audio;
  audio.source_sample_rate = source_rate;
  audio.source_channels = source_channels;
  audio.sample_rate = options.sample_rate;
  if (source_rate != options.sample_rate) {
    audio.samples = Resample(mono, source_rate, options.sample_rate);
    audio.resampled = true;
  } else {
    audio.samples = std::move(mono);
  }
  TruncateTo(options, audio);
  return audio;
}

namespace {

// Reads every frame of an open libsndfile handle, picks/mixes channels, scales to the int16
// range and resamples.
Audio ReadAll(SNDFILE* file, const SF_INFO& info, const std::string& what,
              const DecodeOptions& options) {
  if (info.channels <= 0 || info.samplerate <= 0) {
    throw DataError(fmt::format("{}: invalid audio header ({} channels, {} Hz)", what,
                                info.channels, info.samplerate));
  }
  const auto channels = static_cast<std::size_t>(info.channels);
  const sf_count_t limit = SourceFramesNeeded(options, info.samplerate);
  std::vector<float> mono;
  if (info.frames > 0 && info.frames < (sf_count_t{1} << 34)) {
    mono.reserve(static_cast<std::size_t>(limit < 0 ? info.frames : std::min(info.frames, limit)));
  }
  std::vector<float> buffer(static_cast<std::size_t>(kChunkFrames) * channels);
  sf_count_t total = 0;
  for (;;) {
    const sf_count_t want = limit < 0 ? kChunkFrames : std::min(kChunkFrames, limit - total);
    if (want <= 0) break;
    const sf_count_t got = sf_readf_float(file, buffer.data(), want);
    if (got <= 0) break;
    total += got;
    for (sf_count_t f = 0; f < got; ++f) {
      const float* frame = buffer.data() + static_cast<std::size_t>(f) * channels;
      float value = frame[0];
      if (options.channels == ChannelPolicy::kMix && channels > 1) {
        float sum = 0.0f;
        for (std::size_t c = 0; c < channels; ++c) sum += frame[c];
        value = sum / static_cast<float>(channels);
      }
      mono.push_back(value * kInt16Scale);
    }
  }
  if (sf_error(file) != SF_ERR_NO_ERROR) {
    throw DataError(fmt::format("{}: corrupt audio data after {} frames: {}", what, total,
                                sf_strerror(file)));
  }
  if (limit < 0 && info.frames > 0 && info.frames != SF_COUNT_MAX && total < info.frames) {
    throw DataError(fmt::format("{}: truncated or corrupt audio: {} frames announced, {} decoded",
                                what, info.frames, total));
  }
  return FinishAudio(std::move(mono), info.samplerate, info.channels, what, options);
}

void CheckOptions(const DecodeOptions& options) {
  if (options.sample_rate <= 0) {
    throw std::invalid_argument(
        fmt::format("DecodeOptions::sample_rate must be positive, got {}", options.sample_rate));
  }
}

}  // namespace

Audio DecodeMemory(const std::string& bytes, const std::string& what, const DecodeOptions& options) {
  CheckOptions(options);
  if (bytes.empty()) throw DataError(fmt::format("{}: no audio data (zero bytes)", what));
  MemoryFile memory{&bytes};
  SF_VIRTUAL_IO io{MemLength, MemSeek, MemRead, MemWrite, MemTell};
  SF_INFO info{};
  SndfilePtr file(sf_open_virtual(&io, SFM_READ, &info, &memory));
  if (!file) {
    throw DataError(fmt::format("{}: unreadable audio data: {}", what, sf_strerror(nullptr)));
  }
  return ReadAll(file.get(), info, what, options);
}

Audio DecodeFile(const stdfs::path& path, const DecodeOptions& options) {
  CheckOptions(options);
  std::error_code ec;
  const stdfs::file_status status = stdfs::status(path, ec);
  if (!stdfs::exists(status)) {
    throw DataError(fmt::format("{}: audio file does not exist", path.string()));
  }
  if (!stdfs::is_regular_file(status)) {
    throw DataError(fmt::format("{}: not a regular file", path.string()));
  }
  const std::uintmax_t size = stdfs::file_size(path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot stat: {}", path.string(), ec.message()));
  if (size == 0) throw DataError(fmt::format("{}: empty audio file (zero bytes)", path.string()));
  if (::access(path.c_str(), R_OK) != 0) {
    throw DataError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
  }

  const std::string ext = LowerExtension(path);
  if (std::find(kLibavExtensions.begin(), kLibavExtensions.end(), ext) != kLibavExtensions.end()) {
    return DecodeWithLibav(path, options, "");
  }
  if (ext == ".wav") CheckWavNotTruncated(path, size);

  SF_INFO info{};
  SndfilePtr file(sf_open(path.c_str(), SFM_READ, &info));
  if (!file) {
    const int code = sf_error(nullptr);
    const std::string message = sf_strerror(nullptr);
    if (code == SF_ERR_UNRECOGNISED_FORMAT) {
      return DecodeWithLibav(path, options, message);
    }
    throw DataError(fmt::format("{}: unreadable audio file: {}", path.string(), message));
  }
  return ReadAll(file.get(), info, path.string(), options);
}

Audio DecodePipe(const std::string& command, const DecodeOptions& options) {
  CheckOptions(options);
  const std::string what = fmt::format("'{} |'", command);
  ProcessResult result = RunShell(command);
  if (!result.ok()) {
    throw DataError(fmt::format("{}: command failed: {}", what, result.Describe()));
  }
  if (result.output.empty()) {
    throw DataError(fmt::format("{}: command wrote no audio to its standard output", what));
  }
  return DecodeMemory(result.output, what, options);
}

Audio DecodeConcat(const stdfs::path& list, const DecodeOptions& options) {
  CheckOptions(options);
  const std::vector<stdfs::path> parts = ReadConcatList(list);
  Audio all;
  all.sample_rate = options.sample_rate;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    Audio part;
    try {
      part = DecodeFile(parts[i], options);
    } catch (const DataError& e) {
      throw DataError(fmt::format("{} (part {} of concatenation list {})", e.what(), i + 1,
                                  list.string()));
    }
    if (i == 0) all.source_sample_rate = part.source_sample_rate;
    all.source_channels = std::max(all.source_channels, part.source_channels);
    all.resampled = all.resampled || part.resampled;
    all.samples.insert(all.samples.end(), part.samples.begin(), part.samples.end());
    if (options.max_samples > 0 && all.samples.size() >= options.max_samples) break;
  }
  TruncateTo(options, all);
  return all;
}

Audio Decode(const AudioSource& source, const DecodeOptions& options) {
  switch (source.kind) {
    case AudioSource::Kind::kPipe:
      return DecodePipe(source.value, options);
    case AudioSource::Kind::kConcat:
      return DecodeConcat(source.value, options);
    case AudioSource::Kind::kFile:
      break;
  }
  return DecodeFile(source.value, options);
}

Audio Decode(std::string_view wav_scp_value, const DecodeOptions& options) {
  return Decode(AudioSource::Parse(wav_scp_value), options);
}

void WriteWav(const stdfs::path& path, const std::vector<float>& samples, int sample_rate) {
  if (sample_rate <= 0) {
    throw std::invalid_argument(fmt::format("WriteWav: sample rate must be positive, got {}", sample_rate));
  }
  std::error_code ec;
  if (path.has_parent_path()) stdfs::create_directories(path.parent_path(), ec);
  fs::ScopedTempFile scoped(path);  // removed on failure and on interruption
  const stdfs::path& tmp = scoped.path();
  std::vector<short> pcm(samples.size());
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const float v = std::nearbyint(std::clamp(samples[i], -32768.0f, 32767.0f));
    pcm[i] = static_cast<short>(v);
  }
  SF_INFO info{};
  info.samplerate = sample_rate;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  {
    SndfilePtr file(sf_open(tmp.c_str(), SFM_WRITE, &info));
    if (!file) {
      throw DataError(fmt::format("{}: cannot create WAV file: {}", tmp.string(), sf_strerror(nullptr)));
    }
    const auto n = static_cast<sf_count_t>(pcm.size());
    if (sf_write_short(file.get(), pcm.data(), n) != n) {
      const std::string message = sf_strerror(file.get());
      file.reset();
      throw DataError(fmt::format("{}: write failed: {}", path.string(), message));
    }
  }
  stdfs::rename(tmp, path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot rename into place", path.string()));
  scoped.Release();
}

void ResampleReporter::Note(std::string_view utt_id, const Audio& audio) {
  if (!audio.resampled) return;
  std::lock_guard<std::mutex> lock(mutex_);
  ++total_;
  target_rate_ = audio.sample_rate;
  if (per_rate_[audio.source_sample_rate]++ == 0) {
    ASV_LOG(Info, "{}: resampling audio from {} Hz to {} Hz (first: {}); logged once per rate",
            dataset_, audio.source_sample_rate, audio.sample_rate, utt_id);
  }
}

std::size_t ResampleReporter::resampled_count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return total_;
}

void ResampleReporter::LogSummary() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (total_ == 0) return;
  std::string rates;
  for (const auto& [rate, n] : per_rate_) {
    rates += fmt::format("{}{} from {} Hz", rates.empty() ? "" : ", ", n, rate);
  }
  ASV_LOG(Info, "{}: {} utterances resampled to {} Hz ({})", dataset_, total_, target_rate_, rates);
}

}  // namespace asv::audio
