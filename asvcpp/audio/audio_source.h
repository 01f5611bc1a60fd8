// Audio sources as they appear in the value column of a Kaldi wav.scp file.
//
// Three kinds are understood (see decode.h for how each is decoded):
//   /data/vox1/wav/id10270/x6uYqmx31kE/00001.wav          a file (wav, flac, ogg, m4a, ...)
//   sox /data/x.sph -t wav - |                             a Kaldi pipe: a shell command whose
//                                                          standard output is audio (WAV)
//   cat:/out/datasets/voxceleb2_cat/lists/cat/id00012-21Uxsk56VDQ.txt
//                                                          a concatenation list (asvcpp's own):
//                                                          the listed files decoded one after
//                                                          another, in list order
// The concatenation list file uses ffmpeg's concat-demuxer syntax (one `file '<path>'` line per
// part), so the same file also works with `ffmpeg -f concat -safe 0 -i <list>`.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace asv::audio {

/// Prefix that marks a concatenation list in a wav.scp value.
inline constexpr std::string_view kConcatPrefix = "cat:";

/// One parsed wav.scp value.
struct AudioSource {
  enum class Kind {
    kFile,    ///< `value` is a file path.
    kPipe,    ///< `value` is a shell command (without the trailing '|').
    kConcat,  ///< `value` is the path of a concatenation list file.
  };
  Kind kind = Kind::kFile;
  std::string value;

  /// Parses a wav.scp value: trailing '|' (after optional spaces) makes a pipe, the prefix "cat:"
  /// a concatenation list, anything else a file path (kept verbatim, spaces included). Throws
  /// DataError for an empty value, an empty command before '|', Kaldi's stdin specifier "-",
  /// and Kaldi's byte-offset form "file.ark:1234" pointing into an archive (not supported).
  static AudioSource Parse(std::string_view wav_scp_value);

  /// The wav.scp value again: "path", "command |" or "cat:list".
  std::string ToString() const;
};

/// Reads a concatenation list: lines `file '<path>'` (ffmpeg quoting: text in single quotes is
/// literal, outside quotes a backslash escapes the next character), `#` comments, blank lines and
/// an optional `ffconcat version 1.0` header. Relative paths are relative to the list's folder.
/// Throws DataError naming list:line for other directives (inpoint, duration, ...: they would
/// change what is concatenated), for malformed lines and for a list with no file.
std::vector<std::filesystem::path> ReadConcatList(const std::filesystem::path& list);

/// The text of a concatenation list: one `file '<path>'` line per part, quotes escaped the ffmpeg
/// way ('\''). Paths are written as given (use absolute paths). Does not throw.
std::string ConcatListText(const std::vector<std::filesystem::path>& parts);

/// Writes ConcatListText(parts) to `list` atomically (fs::WriteFileAtomic; throws its DataError).
void WriteConcatList(const std::filesystem::path& list,
                     const std::vector<std::filesystem::path>& parts);

}  // namespace asv::audio
