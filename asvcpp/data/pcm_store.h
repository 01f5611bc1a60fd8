// A PCM store: the audio of a training set decoded once, as 16-bit samples in one file that is
// memory-mapped for random access to any segment of any utterance.
//
// Why this format. Training draws short random segments (e.g. 2 s) of every utterance each epoch,
// in a new random order per epoch. Decoding m4a/flac per step would dominate the CPU; sharded
// archives (tar, WebDataset) must be read sequentially, shard by shard, so a random segment of a
// random utterance costs reading the whole shard. One flat file of int16 samples costs 2 bytes
// per sample (VoxCeleb2 dev at 16 kHz: about 280 GB, a third of float32), needs no parsing, and
// with mmap a segment read is a page-cache lookup (or one disk read) of exactly its bytes, safe
// from any number of threads. int16 keeps the values every 16-bit source has exactly (the
// decoders return the int16 value range, asvcpp/audio/decode.h); only resampled or float sources
// are rounded to the nearest integer.
//
// Files in the store's folder:
//   pcm.bin             int16 little-endian mono samples of every utterance, one after another
//                       (sample_rate Hz, 2 bytes per sample), in the order of the build's entries.
//   pcm.bin.sha256      the SHA-256 of pcm.bin (coreutils sha256sum format; `sha256sum -c`).
//   pcm.bin.chunks      the SHA-256 of each chunk of pcm.bin (chunk_bytes each, the last one
//                       shorter), one 64-digit hex line per chunk: a reader checks every chunk the
//                       first time it reads from it, so a corrupt byte is found before training
//                       uses it, at the cost of hashing the file once per process.
//   index               one line per stored utterance: "<utterance id> <offset> <samples>",
//                       offset and length in samples (byte offset = 2 * offset).
//   skipped_utterances  "<utterance id> <reason>" for every entry whose audio could not be used
//                       (the decoder's DataError: missing, unreadable, truncated, empty file,
//                       NaN/infinite/impossibly large samples); empty when none was.
//   header              written last; its presence means the store is complete. Text lines
//                       "<key> <value>": the first line "asvcpp-pcm-store 1" (format, version),
//                       then sample_rate, sample_format (int16le), utterances, samples (total),
//                       skipped, clipped_samples, data_checksum (of pcm.bin), index_checksum (of
//                       the index file), entries_checksum (of the build's entries and sample
//                       rate, which tells a rerun that there is nothing to do), chunk_bytes and
//                       chunks_checksum (of pcm.bin.chunks). A store of an older asvcpp has no
//                       chunk checksums: a rerun of its build adds them after checking pcm.bin
//                       against data_checksum (one read of the file), and until then Open checks
//                       the whole file.
//
// Building is resumable. While it runs, everything goes into <folder>/partial/ (pcm.bin, index,
// skipped, progress). Entries are decoded in parallel and appended in entry order; after every
// chunk of entries the partial files are synced and `progress` (the committed entry count and the
// committed length of each file) is replaced atomically. A build that is interrupted, killed or
// fails continues from its last committed chunk when run again with the same entries: bytes past
// the committed lengths are cut off, the committed samples are hashed again (read once), and the
// result is byte for byte that of an uninterrupted build. The partial files are deliberately not
// temporary files in the sense of asvcpp/base/temp_files.h (which are removed on interruption):
// they are what a rerun continues from. A rerun with other entries or another sample rate
// discards them and starts over. When every entry is done, the header of an older store (if any)
// is removed first, the partial files are renamed into place, the checksum file and finally the
// header written, and partial/ removed; a store is therefore either complete (header present)
// or refused by PcmStore::Open, never presented half-written. An older complete store stays
// usable until a new build reaches that final step.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "asvcpp/base/progress.h"

namespace asv::data {

inline constexpr std::string_view kPcmDataFile = "pcm.bin";
inline constexpr std::string_view kPcmIndexFile = "index";
inline constexpr std::string_view kPcmSkippedFile = "skipped_utterances";
inline constexpr std::string_view kPcmHeaderFile = "header";
inline constexpr std::string_view kPcmPartialFolder = "partial";
inline constexpr std::string_view kPcmChunkFile = "pcm.bin.chunks";
/// Bytes per checksummed chunk of pcm.bin (PcmStoreOptions::chunk_bytes): 4 MiB, about 2 minutes
/// of 16 kHz audio.
inline constexpr std::int64_t kPcmChunkBytes = 4 << 20;
/// Format version written in the header's first line; Open refuses other versions.
inline constexpr int kPcmStoreVersion = 1;

/// One utterance to store: its id and its audio source as the value column of a Kaldi wav.scp
/// holds it (a file path, "command |" or "cat:list", asvcpp/audio/audio_source.h).
struct PcmStoreEntry {
  std::string id;      ///< Non-empty, no whitespace, unique within the entries.
  std::string source;  ///< wav.scp value.
};

/// How BuildPcmStore decodes and commits.
struct PcmStoreOptions {
  int sample_rate = 16000;             ///< Hz; audio at other rates is resampled (libsoxr, audio::Decode).
  int threads = 1;                     ///< Decoding threads (the writer is the caller's thread).
  std::size_t chunk_utterances = 1000; ///< Entries per commit (sync + progress file); >= 1.
  std::size_t max_warnings = 20;       ///< Skipped entries warned about one by one; the rest summarised.
  std::int64_t chunk_bytes = kPcmChunkBytes;  ///< Bytes per chunk checksum; even, >= 2.
  base::ProgressMode progress = base::ProgressMode::kAuto;
  /// Called on the caller's thread after each commit with the number of entries committed so far
  /// (the last call, with entries.size(), comes before the store is put in place). For progress
  /// reporting and for tests that interrupt a build: an exception thrown here stops the build
  /// with everything committed so far kept for a rerun.
  std::function<void(std::size_t committed_entries)> after_commit;
};

/// An entry left out and why.
struct PcmSkippedUtterance {
  std::string utterance;
  std::string reason;  ///< The decoder's message (names the file), on one line.
};

/// What BuildPcmStore did (or found, when the store was already complete).
struct PcmStoreReport {
  std::filesystem::path folder;
  std::size_t utterances = 0;        ///< Utterances in the store.
  std::vector<PcmSkippedUtterance> skipped;
  std::int64_t samples = 0;          ///< Samples in the store (all utterances).
  std::int64_t clipped_samples = 0;  ///< Samples outside the int16 range, clipped (resampler overshoot, float sources).
  std::size_t resampled = 0;         ///< Utterances decoded in this call that were resampled.
  std::size_t resumed_entries = 0;   ///< Entries committed by an earlier, interrupted build and not decoded again.
  bool already_complete = false;     ///< The store was complete for these entries; nothing was done.
  double wall_seconds = 0.0;

  /// "<folder>: 1,234 utterances (5.20 h), 2 skipped, resumed after 1,000 entries, in 12.3 s".
  std::string Summary() const;
};

/// Decodes every entry (audio::Decode at options.sample_rate, first channel) and writes the store
/// into `folder` (created if missing) as described in the header comment. Entries whose decoding
/// throws DataError are skipped and listed, never fatal. Samples are rounded to the nearest
/// integer and clipped to [-32768, 32767] (counted in clipped_samples). Running it again with the
/// same entries and sample rate on a complete store (pcm.bin of the recorded size, the index
/// matching its checksum; the samples are not read) does nothing (already_complete); on an
/// interrupted build it continues from the last commit.
/// Throws std::invalid_argument for options out of range (sample_rate, threads < 1,
/// chunk_utterances 0); DataError for no entries, an empty, duplicate or whitespace-containing
/// id (naming it), when another build of the same folder is running (an exclusive flock on the
/// folder, held for the whole build), and for files of `folder` that cannot be written, read or
/// synced (naming them); StageError naming the folder when every entry is skipped (with the first reason) or an
/// entry fails with an error other than DataError (e.g. the resampler). Whatever it throws,
/// nothing incomplete is presented as a store.
PcmStoreReport BuildPcmStore(const std::vector<PcmStoreEntry>& entries, const std::filesystem::path& folder,
                             const PcmStoreOptions& options = {});

/// A complete PCM store opened for reading: the index in memory, pcm.bin memory-mapped
/// read-only. All const member functions are thread-safe. Move-only.
class PcmStore {
 public:
  /// Opens the store in `folder`: reads and checks the header (format, version, int16le,
  /// sample rate), the index (against the header's index checksum; ids unique, offsets
  /// contiguous, lengths adding up to the header's sample count) and the size of pcm.bin
  /// (2 bytes per sample), and maps pcm.bin. Does not read the samples (see VerifyData).
  /// Throws DataError naming the folder and the file: no store there, an interrupted build
  /// ("run the build again to complete it"), a malformed or unsupported header, an index that
  /// does not match its checksum or is malformed, a truncated or oversized pcm.bin, a failed mmap.
  /// A store without chunk checksums (built by an older asvcpp) is checked whole here instead
  /// (VerifyData, one read of pcm.bin); pcm.bin.chunks that does not match the header's
  /// chunks_checksum, or lists another number of chunks, is a DataError too.
  static PcmStore Open(const std::filesystem::path& folder);

  PcmStore(PcmStore&& other) noexcept;
  PcmStore& operator=(PcmStore&& other) noexcept;
  PcmStore(const PcmStore&) = delete;
  PcmStore& operator=(const PcmStore&) = delete;
  ~PcmStore();

  /// Utterances in the store, in index order (the build's entry order, skipped ones left out).
  std::size_t NumUtterances() const { return ids_.size(); }
  /// Id of utterance `i`. Throws std::out_of_range for i >= NumUtterances().
  const std::string& Id(std::size_t i) const;
  /// Length of utterance `i` in samples (>= 1). Throws std::out_of_range for i >= NumUtterances().
  std::int64_t NumSamples(std::size_t i) const;
  /// Index of utterance `id`, or nullopt when it is not in the store.
  std::optional<std::size_t> Find(std::string_view id) const;
  /// Sample rate in Hz (the header's).
  int sample_rate() const { return sample_rate_; }
  /// Samples of all utterances together.
  std::int64_t TotalSamples() const { return total_samples_; }
  const std::filesystem::path& folder() const { return folder_; }

  /// Writes samples [start, start + count) of utterance `i` to out[0 .. count) as floats in the
  /// int16 value range (sample 1234 -> 1234.0f, the convention of asvcpp/audio/decode.h).
  /// The first read from a chunk of pcm.bin checks that chunk against pcm.bin.chunks (in this
  /// process; concurrent first reads may both check it). Throws std::out_of_range when
  /// i >= NumUtterances(), start < 0, count < 0 or start + count > NumSamples(i); DataError
  /// naming the folder, the byte range and the utterance when a chunk does not match its
  /// checksum (the store is corrupt: build it again). Reads through the mapping: a store whose
  /// pcm.bin is truncated after Open is undefined behaviour (SIGBUS), as for any mmap.
  void Read(std::size_t i, std::int64_t start, std::int64_t count, float* out) const;

  /// Chunks of pcm.bin checked so far by Read (or all of them after VerifyData), and in all.
  std::int64_t VerifiedChunks() const;
  std::int64_t NumChunks() const { return num_chunks_; }

  /// Reads all of pcm.bin (GBs: at about 0.4 GB/s, minutes for VoxCeleb2) and compares its
  /// SHA-256 with the header's data checksum. Throws DataError naming the folder when they
  /// differ or the file cannot be read.
  void VerifyData() const;

 private:
  PcmStore() = default;
  void Unmap() noexcept;
  // Checks chunk `c` against its checksum (DataError naming utterance `utterance` when it fails)
  // and marks it checked.
  void VerifyChunk(std::int64_t c, std::size_t utterance) const;

  std::filesystem::path folder_;
  int sample_rate_ = 0;
  std::int64_t total_samples_ = 0;
  std::string data_checksum_;
  std::vector<std::string> ids_;
  std::vector<std::int64_t> offsets_;  // NumUtterances() + 1 entries; offsets_[i + 1] - offsets_[i] = length
  std::unordered_map<std::string_view, std::size_t> by_id_;  // views into ids_
  const std::int16_t* samples_ = nullptr;
  std::size_t mapped_bytes_ = 0;
  std::int64_t chunk_bytes_ = kPcmChunkBytes;
  std::int64_t num_chunks_ = 0;
  std::vector<std::string> chunk_sums_;                // "sha256:<hex>" of each chunk
  std::unique_ptr<std::atomic<bool>[]> chunk_checked_;  // num_chunks_ flags, set once checked
};

}  // namespace asv::data
