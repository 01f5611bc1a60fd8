// Decoding audio sources (wav.scp values) to mono float samples at a requested sample rate.
//
// Sample values follow Kaldi's convention: the int16 value range, NOT normalised to [-1, 1).
// A 16-bit PCM sample 1234 decodes to 1234.0f exactly; other sample formats are scaled to the
// same range (24/32-bit PCM: divided by 2^8 / 2^16; float files: multiplied by 32768).
//
// How each source kind (audio_source.h) is decoded:
//   file    libsndfile (wav, flac, ogg/vorbis, opus, aiff, mp3, ...). Files with the extensions
//           .m4a .aac .mp4 .m4b .webm .mkv .wma .3gp .amr, and any file libsndfile does not
//           recognise, are decoded by FFmpeg's libraries (libavformat, libavcodec) in this
//           process, to exactly the samples of
//             ffmpeg -nostdin -v error -i FILE -map 0:a:0 -f wav -c:a pcm_s16le -
//           (the first audio stream, converted to int16; native rate and all channels kept, so
//           channel choice and resampling are the same as for every other source, see below)
//           without starting a process per file (VoxCeleb2 has a million m4a files).
//   pipe    `/bin/sh -c COMMAND`; its standard output must be audio libsndfile can read from
//           memory (WAV as in Kaldi, or FLAC, ...). A streamed WAV header (data size 0 or
//           0xFFFFFFFF) is fine.
//   concat  each listed file decoded as a file (above), resampled, and the parts appended in
//           list order; the exact concatenation of the decoded parts.
// Channels: the first channel (channel 0, Kaldi's default for multi-channel input) unless
// DecodeOptions::channels asks for the mean of all channels.
// Resampling: libsoxr high quality (resample.h) when the source rate differs from the requested
// rate; Audio::resampled tells the caller, who can log it once per data set (ResampleReporter).
//
// Every function here is thread-safe (stage 1 decodes in parallel) and throws asv::DataError
// whose message names the path or command: missing file, not a regular file, empty (zero-length)
// file, unreadable or unsupported format, truncated or corrupt data (a WAV header promising more
// data than the file holds, a decoder error part-way, no audio stream or decoder), no samples
// at all, a sample that is NaN, infinite or larger than 1024 times full scale in magnitude
// (corrupt float data, which would poison features downstream), a pipe that could not be
// started or exited with a non-zero status (the message includes its stderr tail).
#pragma once

#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "asvcpp/audio/audio_source.h"

namespace asv::audio {

/// How multi-channel audio becomes mono.
enum class ChannelPolicy {
  kFirst,  ///< Channel 0 only (Kaldi's behaviour).
  kMix,    ///< Arithmetic mean of all channels.
};

/// Options shared by all decoding functions.
struct DecodeOptions {
  int sample_rate = 16000;                         ///< Requested output rate in Hz (> 0).
  ChannelPolicy channels = ChannelPolicy::kFirst;  ///< Multi-channel to mono.
  /// At most this many output samples (0: all). Files are read only as far as needed (plus 50 ms
  /// for the resampler's filter when the rates differ), so a few seconds of a long noise
  /// recording cost a few seconds of reading; pipes are decoded whole and cut. Reading stops
  /// early without the truncation check of the unread rest.
  std::size_t max_samples = 0;
};

/// Decoded mono audio.
struct Audio {
  std::vector<float> samples;   ///< Mono samples in the int16 value range.
  int sample_rate = 0;          ///< Hz; always DecodeOptions::sample_rate.
  int source_sample_rate = 0;   ///< Hz of the source before resampling (first part for concat).
  int source_channels = 0;      ///< Channels in the source (maximum over parts for concat).
  bool resampled = false;       ///< True when any part was resampled.

  /// Duration in seconds (samples / sample_rate).
  double Seconds() const {
    return sample_rate > 0 ? static_cast<double>(samples.size()) / sample_rate : 0.0;
  }
};

/// Decodes one wav.scp value (AudioSource::Parse, then Decode(source)).
Audio Decode(std::string_view wav_scp_value, const DecodeOptions& options = {});

/// Decodes a parsed source (dispatches to DecodeFile, DecodePipe or DecodeConcat).
Audio Decode(const AudioSource& source, const DecodeOptions& options = {});

/// True when this build decodes m4a and the other formats libsndfile lacks with FFmpeg's
/// libraries in process; false when it was built without them (those files then throw).
bool HaveLibavDecoding();

/// Decodes an audio file through libsndfile or ffmpeg (see the header comment).
Audio DecodeFile(const std::filesystem::path& path, const DecodeOptions& options = {});

/// Runs `command` through /bin/sh and decodes its standard output. A non-zero exit status is an
/// error even when audio was produced (a half-written stream is not trusted).
Audio DecodePipe(const std::string& command, const DecodeOptions& options = {});

/// Decodes every file of a concatenation list (ReadConcatList) and appends them in list order.
Audio DecodeConcat(const std::filesystem::path& list, const DecodeOptions& options = {});

/// Decodes audio bytes held in memory (any format libsndfile reads; a streamed WAV header is
/// accepted). `what` names the origin in error messages.
Audio DecodeMemory(const std::string& bytes, const std::string& what,
                   const DecodeOptions& options = {});

/// Writes mono samples (int16 value range) as a 16-bit PCM WAV file at `sample_rate` Hz, rounded
/// to the nearest integer and clipped to [-32768, 32767]; written to a temporary name and renamed
/// into place (parent folders created). Throws DataError naming the path on failure.
void WriteWav(const std::filesystem::path& path, const std::vector<float>& samples, int sample_rate);

/// Collects "this source was resampled" notices of one data set and logs each distinct source
/// rate once (the first utterance seen at that rate), instead of one line per file. Thread-safe.
///
///   ResampleReporter reporter("voxceleb1");
///   ... reporter.Note(utt_id, audio);   // in the decoding threads
///   reporter.LogSummary();              // "voxceleb1: 1,234 of 5,000 utterances resampled ..."
class ResampleReporter {
 public:
  explicit ResampleReporter(std::string dataset) : dataset_(std::move(dataset)) {}
  /// Counts one decoded utterance; logs (Info) the first utterance of each new source rate.
  void Note(std::string_view utt_id, const Audio& audio);
  /// Number of utterances noted so far that were resampled.
  std::size_t resampled_count() const;
  /// Logs one summary line if any utterance was resampled.
  void LogSummary() const;

 private:
  std::string dataset_;
  mutable std::mutex mutex_;
  std::map<int, std::size_t> per_rate_;  // source rate -> resampled utterances
  std::size_t total_ = 0;
  int target_rate_ = 0;
};

}  // namespace asv::audio
