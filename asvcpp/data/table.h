// Kaldi text tables: the one-entry-per-line files of a Kaldi data directory.
//
//   wav.scp          <utt> <audio source: path, "cmd ... |" or "cat:<list>">
//   utt2spk          <utt> <spk>
//   spk2utt          <spk> <utt> <utt> ...
//   utt2num_frames   <utt> <frames>
//   feats.scp        <utt> <rxspecifier, e.g. /abs/feats.ark:1234>
//   vad.scp          <utt> <rxspecifier>
//
// Tables are std::maps: their iteration order is byte order of the ids (C locale, what Kaldi's
// utils/fix_data_dir.sh and `LC_ALL=C sort` produce), so every file written here is sorted.
// Readers validate as they go and throw DataError "file:line: message" for duplicate ids,
// missing fields, extra fields where one value is expected, and malformed numbers. Blank lines
// are skipped; a trailing '\r' (files edited on Windows) is ignored.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace asv::data {

/// id -> value (the rest of the line, or one token).
using Table = std::map<std::string, std::string>;
/// speaker -> utterances (each list sorted).
using Spk2Utt = std::map<std::string, std::vector<std::string>>;
/// id -> count (e.g. utt2num_frames).
using Counts = std::map<std::string, std::int64_t>;

/// How the value column of a table is read.
enum class ValueFormat {
  kRestOfLine,   ///< Everything after the id, trimmed (wav.scp: paths and commands with spaces).
  kSingleToken,  ///< Exactly one whitespace-free token (utt2spk, feats.scp, vad.scp).
};

/// Reads a two-column table. Throws DataError naming the path when it cannot be read, and
/// "path:line: ..." for a line with no value, a duplicate id (the message names the earlier line)
/// or, for kSingleToken, more than one value token.
Table ReadTable(const std::filesystem::path& path, ValueFormat format);

/// Reads spk2utt: a speaker id followed by one or more utterance ids. Duplicate speakers, a line
/// without utterances and an utterance listed twice (under any speaker) are "path:line" errors.
/// Each speaker's list is returned sorted.
Spk2Utt ReadSpk2Utt(const std::filesystem::path& path);

/// Reads an id -> non-negative integer table (utt2num_frames). Malformed numbers are errors.
Counts ReadCounts(const std::filesystem::path& path);

/// Writes "id value" lines in byte order of the ids, atomically (fs::WriteFileAtomic).
/// Throws std::invalid_argument for an empty id or an id containing whitespace, and for a value
/// containing a newline.
void WriteTable(const std::filesystem::path& path, const Table& table);

/// Writes "spk utt1 utt2 ..." lines, speakers and utterances in byte order, atomically.
void WriteSpk2Utt(const std::filesystem::path& path, const Spk2Utt& spk2utt);

/// Writes "id count" lines in byte order, atomically.
void WriteCounts(const std::filesystem::path& path, const Counts& counts);

/// spk2utt from utt2spk (what Kaldi's utils/utt2spk_to_spk2utt.pl does; lists sorted).
Spk2Utt MakeSpk2Utt(const Table& utt2spk);

/// utt2spk from spk2utt.
Table MakeUtt2Spk(const Spk2Utt& spk2utt);

/// True when the utterance ids sort in the same order as their speakers (Kaldi's requirement
/// that `sort utt2spk` and `sort -k2 utt2spk` agree; holds when every utterance id starts with
/// its speaker id followed by a separator such as '-'). `first_violation` receives the first
/// utterance that breaks it.
bool IsSortedBySpeaker(const Table& utt2spk, std::string* first_violation = nullptr);

/// True when `id` is non-empty and has no whitespace or control characters (a valid Kaldi key).
bool IsValidId(std::string_view id);

}  // namespace asv::data
