// Reading the sampling rate from a Kaldi-style MFCC options file (configs/mfcc.conf).
//
// ASVtorch's post_update_call sets features.sampling_rate from the first line containing
// `--sample-frequency` (and breaks on trailing comments and commented-out lines, reference
// section 13). We follow Kaldi's own config-file reading instead: `#` starts a comment anywhere on
// a line, blank lines are skipped, option names treat '_' and '-' alike, and the last occurrence
// wins.
#pragma once

#include <optional>
#include <string>

namespace asv::settings {

/// --sample-frequency from the text of an options file; nullopt when the option is absent.
/// `path` is used in messages only. Throws ConfigError ("path:line: ...") when the value is not a
/// positive whole number of Hz (Kaldi reads it as a float: "16000" and "16000.0" are accepted).
std::optional<int> ParseSampleFrequency(const std::string& text, const std::string& path);

/// ParseSampleFrequency on the file's contents. Throws DataError when the file cannot be read.
std::optional<int> ReadSampleFrequency(const std::string& path);

}  // namespace asv::settings
