#include "asvcpp/audio/decode_libav.h"

#if ASV_HAVE_LIBAV

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <new>

#include <fmt/format.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/log.h>
#include <libavutil/samplefmt.h>
}

#include "asvcpp/base/error.h"
#include "asvcpp/base/log.h"

namespace asv::audio {
namespace {

std::string AvError(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, text, sizeof(text));
  return text;
}

struct FormatCloser {
  void operator()(AVFormatContext* f) const { avformat_close_input(&f); }
};
struct CodecFreer {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};

int ChannelsOf(const AVFrame* frame) {
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 24, 100)
  return frame->ch_layout.nb_channels;
#else
  return frame->channels;
#endif
}

bool SupportedFormat(AVSampleFormat format) {
  switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8:
    case AV_SAMPLE_FMT_S16:
    case AV_SAMPLE_FMT_S32:
    case AV_SAMPLE_FMT_S64:
    case AV_SAMPLE_FMT_FLT:
    case AV_SAMPLE_FMT_DBL:
      return true;
    default:
      return false;
  }
}

// Sample `i` of channel `c` of a decoded frame as the int16 value libswresample's conversion to
// AV_SAMPLE_FMT_S16 gives (libswresample/audioconvert.c, no dithering). `format` is one that
// SupportedFormat accepts.
// `packed` is the frame's format without its planar flag, looked up once per frame.
int Int16Sample(const AVFrame* frame, AVSampleFormat packed, bool planar, int channels, int c, int i) {
  const uint8_t* base = planar ? frame->extended_data[c] : frame->extended_data[0];
  const int index = planar ? i : i * channels + c;
  switch (packed) {
    case AV_SAMPLE_FMT_U8:
      return (static_cast<int>(base[index]) - 0x80) * 256;
    case AV_SAMPLE_FMT_S16:
      return reinterpret_cast<const int16_t*>(base)[index];
    case AV_SAMPLE_FMT_S32:
      return reinterpret_cast<const int32_t*>(base)[index] >> 16;
    case AV_SAMPLE_FMT_S64:
      return static_cast<int>(reinterpret_cast<const int64_t*>(base)[index] >> 48);
    case AV_SAMPLE_FMT_FLT: {
      const long v = lrintf(reinterpret_cast<const float*>(base)[index] * 32768.0f);
      return static_cast<int>(std::clamp(v, -32768L, 32767L));
    }
    case AV_SAMPLE_FMT_DBL: {
      const long v = lrint(reinterpret_cast<const double*>(base)[index] * 32768.0);
      return static_cast<int>(std::clamp(v, -32768L, 32767L));
    }
    default:
      break;
  }
  return 0;
}

}  // namespace

bool HaveLibavDecoding() { return true; }

Audio DecodeWithLibav(const std::filesystem::path& path, const DecodeOptions& options,
                      const std::string& sndfile_error) {
  // FFmpeg's own log lines would interleave with asvrun's; every error reaches the caller as a
  // DataError instead.
  static std::once_flag quiet;
  std::call_once(quiet, [] { av_log_set_level(AV_LOG_QUIET); });
  const std::string what = path.string();
  const std::string also = sndfile_error.empty() ? "" : fmt::format(" (libsndfile: {})", sndfile_error);
  AVFormatContext* raw_format = nullptr;
  if (const int rc = avformat_open_input(&raw_format, what.c_str(), nullptr, nullptr); rc < 0) {
    throw DataError(fmt::format("{}: unreadable audio file: {}{}", what, AvError(rc), also));
  }
  std::unique_ptr<AVFormatContext, FormatCloser> format(raw_format);
  if (const int rc = avformat_find_stream_info(format.get(), nullptr); rc < 0) {
    throw DataError(fmt::format("{}: unreadable audio file: {}{}", what, AvError(rc), also));
  }
  int stream = -1;  // the first audio stream, as ffmpeg's -map 0:a:0
  for (unsigned i = 0; i < format->nb_streams; ++i) {
    if (format->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
      stream = static_cast<int>(i);
      break;
    }
  }
  if (stream < 0) throw DataError(fmt::format("{}: no audio stream{}", what, also));
  const AVCodecParameters* parameters = format->streams[stream]->codecpar;
  const AVCodec* codec = avcodec_find_decoder(parameters->codec_id);
  if (codec == nullptr) {
    throw DataError(fmt::format("{}: no decoder for its audio codec ({})", what, avcodec_get_name(parameters->codec_id)));
  }
  std::unique_ptr<AVCodecContext, CodecFreer> decoder(avcodec_alloc_context3(codec));
  if (!decoder) throw std::bad_alloc();
  if (const int rc = avcodec_parameters_to_context(decoder.get(), parameters); rc < 0) {
    throw DataError(fmt::format("{}: {}", what, AvError(rc)));
  }
  decoder->thread_count = 1;  // utterances are decoded in parallel, each on one thread
  decoder->pkt_timebase = format->streams[stream]->time_base;  // as the ffmpeg program sets it
  if (const int rc = avcodec_open2(decoder.get(), codec, nullptr); rc < 0) {
    throw DataError(fmt::format("{}: cannot open the {} decoder: {}", what, codec->name, AvError(rc)));
  }

  // Channels and rate come from the decoded frames (an HE-AAC stream's frames may have another
  // rate than its container says); they must not change within the file.
  int channels = 0, rate = 0;
  std::int64_t limit = -1;  // source frames needed for options.max_samples, once the rate is known
  std::size_t corrupt_packets = 0;
  std::vector<float> mono;
  std::unique_ptr<AVPacket, PacketFreer> packet(av_packet_alloc());
  std::unique_ptr<AVFrame, FrameFreer> frame(av_frame_alloc());
  if (!packet || !frame) throw std::bad_alloc();
  auto enough = [&] { return limit >= 0 && static_cast<std::int64_t>(mono.size()) >= limit; };
  // Takes every frame the decoder has ready.
  auto drain = [&]() {
    for (;;) {
      const int rc = avcodec_receive_frame(decoder.get(), frame.get());
      if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
      if (rc == AVERROR_INVALIDDATA) {  // the ffmpeg program drops such a frame and goes on
        ++corrupt_packets;
        continue;
      }
      if (rc < 0) {
        throw DataError(fmt::format("{}: corrupt audio data after {} samples: {}", what, mono.size(), AvError(rc)));
      }
      const auto sample_format = static_cast<AVSampleFormat>(frame->format);
      if (!SupportedFormat(sample_format)) {
        throw DataError(fmt::format("{}: unsupported decoded sample format {}", what,
                                    av_get_sample_fmt_name(sample_format) ? av_get_sample_fmt_name(sample_format)
                                                                          : "?"));
      }
      const int frame_channels = ChannelsOf(frame.get());
      if (channels == 0) {
        channels = frame_channels;
        rate = frame->sample_rate;
        if (channels <= 0 || rate <= 0) {
          throw DataError(fmt::format("{}: invalid audio stream ({} channels, {} Hz)", what, channels, rate));
        }
        limit = SourceFramesNeeded(options, rate);
      } else if (frame_channels != channels || frame->sample_rate != rate) {
        throw DataError(fmt::format("{}: the audio changes from {} channels at {} Hz to {} at {} Hz part-way", what,
                                    channels, rate, frame_channels, frame->sample_rate));
      }
      const bool mix = options.channels == ChannelPolicy::kMix && channels > 1;
      const AVSampleFormat packed = av_get_packed_sample_fmt(sample_format);
      const bool planar = av_sample_fmt_is_planar(sample_format) != 0;
      for (int i = 0; i < frame->nb_samples; ++i) {
        // As a WAV of int16 samples read back by libsndfile: x / 32768 per channel, then channel
        // 0 or the mean, times 32768 (ReadAll in decode.cc).
        float value = static_cast<float>(Int16Sample(frame.get(), packed, planar, channels, 0, i)) / 32768.0f;
        if (mix) {
          float sum = 0.0f;
          for (int c = 0; c < channels; ++c) {
            sum += static_cast<float>(Int16Sample(frame.get(), packed, planar, channels, c, i)) / 32768.0f;
          }
          value = sum / static_cast<float>(channels);
        }
        mono.push_back(value * 32768.0f);
      }
      av_frame_unref(frame.get());
    }
  };
  // Sends one packet (nullptr: end of stream), taking the decoder's output when it is full.
  auto send = [&](const AVPacket* p) {
    for (int attempt = 0;; ++attempt) {
      const int rc = avcodec_send_packet(decoder.get(), p);
      if (rc == AVERROR(EAGAIN) && attempt == 0) {
        drain();
        continue;
      }
      if (rc == AVERROR_INVALIDDATA) {
        ++corrupt_packets;
      } else if (rc < 0 && rc != AVERROR_EOF) {
        throw DataError(fmt::format("{}: corrupt audio data after {} samples: {}", what, mono.size(), AvError(rc)));
      }
      drain();
      return;
    }
  };
  int rc = 0;
  while (!enough() && (rc = av_read_frame(format.get(), packet.get())) >= 0) {
    if (packet->stream_index == stream) send(packet.get());
    av_packet_unref(packet.get());
  }
  if (!enough()) {
    if (rc < 0 && rc != AVERROR_EOF) {
      throw DataError(fmt::format("{}: read error after {} samples: {}", what, mono.size(), AvError(rc)));
    }
    send(nullptr);  // flush the decoder's delayed frames
  }
  if (corrupt_packets > 0) {
    ASV_LOG(Warning, "{}: {} corrupt audio packet{} skipped, as the ffmpeg program skips them", what,
            corrupt_packets, corrupt_packets == 1 ? "" : "s");
  }
  return FinishAudio(std::move(mono), rate, channels, what, options);
}

}  // namespace asv::audio

#else  // Built without FFmpeg's libraries (CMake: ASV_WITH_LIBAV=OFF, or AUTO and not found).

#include <fmt/format.h>

#include "asvcpp/base/error.h"

namespace asv::audio {

bool HaveLibavDecoding() { return false; }

Audio DecodeWithLibav(const std::filesystem::path& path, const DecodeOptions& /*options*/,
                      const std::string& sndfile_error) {
  const std::string also = sndfile_error.empty() ? "" : fmt::format(" (libsndfile: {})", sndfile_error);
  throw DataError(fmt::format(
      "{}: cannot decode: this format needs FFmpeg's libraries (libavformat, libavcodec), and this "
      "asvcpp was built without them{}; install libavformat-dev libavcodec-dev libavutil-dev and "
      "rebuild (CMake finds them; -DASV_WITH_LIBAV=ON insists), or convert the audio to WAV or FLAC",
      path.string(), also));
}

}  // namespace asv::audio

#endif  // ASV_HAVE_LIBAV
