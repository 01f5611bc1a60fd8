// Internal to asvcpp/audio: decoding through FFmpeg's libraries (libavformat, libavcodec) in the
// calling process, and the steps decode.cc and it share. Not a public header.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "asvcpp/audio/decode.h"

namespace asv::audio {

/// Decodes the first audio stream of `path` with libavformat/libavcodec (m4a/AAC, webm/opus, mp4,
/// ... whatever the FFmpeg build reads), single-threaded, into samples that are exactly those of
///   ffmpeg -i FILE -map 0:a:0 -f wav -c:a pcm_s16le -
/// read back as WAV (each decoded sample converted to int16 as libswresample does without
/// dithering: float x -> clip(lrintf(x * 32768)), S32 >> 16, U8 - 128 << 8), then channel 0 or
/// the channels' mean (DecodeOptions::channels), resampled with soxr when the rate differs, cut
/// to max_samples (only as many packets are read as that needs). `sndfile_error`, when not empty,
/// is libsndfile's reason for not reading the file, quoted in errors. Throws DataError naming the
/// path: unreadable container, no audio stream, no decoder, corrupt packet, no samples.
Audio DecodeWithLibav(const std::filesystem::path& path, const DecodeOptions& options,
                      const std::string& sndfile_error);

/// Source frames (at `source_rate` Hz) that options.max_samples output samples need, plus 50 ms
/// for the resampler's filter when the rates differ; -1 when max_samples is 0 (all).
std::int64_t SourceFramesNeeded(const DecodeOptions& options, int source_rate);

/// Mono samples at `source_rate` (int16 value range) -> Audio at options.sample_rate (soxr),
/// cut to options.max_samples. Throws DataError naming `what` when `mono` is empty or holds a NaN,
/// infinite or impossibly large sample (magnitude above 1024 times full scale).
Audio FinishAudio(std::vector<float> mono, int source_rate, int source_channels, const std::string& what,
                  const DecodeOptions& options);

}  // namespace asv::audio
