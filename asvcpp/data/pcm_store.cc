#include "asvcpp/data/pcm_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "asvcpp/audio/decode.h"
#include "asvcpp/base/checksum.h"
#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/log.h"
#include "asvcpp/base/sha256_stream.h"
#include "asvcpp/base/thread_pool.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the PCM store maps int16 little-endian samples directly");

namespace asv::data {
namespace {

namespace stdfs = std::filesystem;

constexpr std::string_view kMagic = "asvcpp-pcm-store";
constexpr std::string_view kProgressMagic = "asvcpp-pcm-store-progress";
constexpr std::string_view kSampleFormat = "int16le";
constexpr std::string_view kProgressFile = "progress";
constexpr std::string_view kPartialSkipped = "skipped";

std::string Count(std::int64_t n) { return base::Progress::FormatCount(n); }

std::string OneLine(std::string text) {
  std::replace_if(text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  return text;
}

bool HasWhitespace(std::string_view s) {
  return s.find_first_of(" \t\n\r\v\f") != std::string_view::npos;
}

std::optional<std::int64_t> ParseInt(std::string_view s) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "<key> <value>" lines after a first line "<magic> <version>". Returns the map with the version
// under "" ; throws DataError naming file:line for a malformed line.
std::map<std::string, std::string> ParseKeyValues(const std::string& text, const stdfs::path& file,
                                                  std::string_view magic) {
  std::map<std::string, std::string> values;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size()) {
      throw DataError(fmt::format("{}:{}: malformed line '{}' (expected '<key> <value>')", file.string(), line_no, line));
    }
    std::string key(line.substr(0, space));
    if (line_no == 1) {
      if (key != magic) {
        throw DataError(fmt::format("{}:1: not a file of a PCM store (expected '{} <version>', found '{}')",
                                    file.string(), magic, line));
      }
      key.clear();
    }
    values[key] = std::string(line.substr(space + 1));
  }
  if (line_no == 0) throw DataError(fmt::format("{}: empty file", file.string()));
  return values;
}

std::string Required(const std::map<std::string, std::string>& values, const std::string& key,
                     const stdfs::path& file) {
  const auto it = values.find(key);
  if (it == values.end()) throw DataError(fmt::format("{}: '{}' is missing", file.string(), key));
  return it->second;
}

std::int64_t RequiredInt(const std::map<std::string, std::string>& values, const std::string& key,
                         const stdfs::path& file) {
  const std::string text = Required(values, key, file);
  const auto v = ParseInt(text);
  if (!v || *v < 0) {
    throw DataError(fmt::format("{}: '{}' must be a non-negative integer, found '{}'", file.string(), key, text));
  }
  return *v;
}

// What a build has committed (partial/progress), and at the end what the header records.
struct BuildState {
  std::string entries_checksum;
  int sample_rate = 0;
  std::int64_t committed_entries = 0;
  std::int64_t utterances = 0;
  std::int64_t skipped = 0;
  std::int64_t samples = 0;
  std::int64_t clipped = 0;
  std::int64_t index_bytes = 0;
  std::int64_t skipped_bytes = 0;
  bool complete = false;
  std::string data_checksum;    // when complete
  std::string index_checksum;   // when complete
  std::int64_t chunk_bytes = 0;  // when complete (0 in the header of an older store: no chunk checksums)
  std::string chunks_checksum;   // when complete: of pcm.bin.chunks
};

// The whole-file SHA-256 of pcm.bin and, at the same time, the SHA-256 of each chunk of it.
class ChunkHasher {
 public:
  explicit ChunkHasher(std::int64_t chunk_bytes) : chunk_bytes_(chunk_bytes) {}

  void Update(const void* data, std::size_t bytes) {
    whole_.Update(data, bytes);
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const auto take = static_cast<std::size_t>(std::min<std::int64_t>(static_cast<std::int64_t>(bytes),
                                                                         chunk_bytes_ - in_chunk_));
      chunk_.Update(p, take);
      in_chunk_ += static_cast<std::int64_t>(take);
      p += take;
      bytes -= take;
      if (in_chunk_ == chunk_bytes_) FinishChunk();
    }
  }

  // The whole file's checksum; `chunk_lines` receives pcm.bin.chunks (one hex line per chunk).
  std::string Finish(std::string* chunk_lines) {
    if (in_chunk_ > 0) FinishChunk();
    *chunk_lines = std::move(lines_);
    return whole_.Finish();
  }

 private:
  void FinishChunk() {
    lines_ += chunk_.Finish().substr(fs::kChecksumAlgorithm.size() + 1);
    lines_ += '\n';
    chunk_ = fs::Sha256Stream();
    in_chunk_ = 0;
  }

  std::int64_t chunk_bytes_;
  std::int64_t in_chunk_ = 0;
  fs::Sha256Stream whole_;
  fs::Sha256Stream chunk_;
  std::string lines_;
};

std::string ProgressText(const BuildState& s) {
  std::string text = fmt::format(
      "{} {}\nentries_checksum {}\nsample_rate {}\ncommitted_entries {}\nutterances {}\nskipped {}\nsamples {}\n"
      "clipped_samples {}\nindex_bytes {}\nskipped_bytes {}\ncomplete {}\n",
      kProgressMagic, kPcmStoreVersion, s.entries_checksum, s.sample_rate, s.committed_entries, s.utterances,
      s.skipped, s.samples, s.clipped, s.index_bytes, s.skipped_bytes, s.complete ? 1 : 0);
  if (s.complete) {
    text += fmt::format("data_checksum {}\nindex_checksum {}\nchunk_bytes {}\nchunks_checksum {}\n", s.data_checksum,
                        s.index_checksum, s.chunk_bytes, s.chunks_checksum);
  }
  return text;
}

// The progress of an interrupted build, or nullopt when the file is unreadable or malformed (the
// build then starts over).
std::optional<BuildState> ReadProgress(const stdfs::path& file) {
  try {
    const auto v = ParseKeyValues(fs::ReadFile(file), file, kProgressMagic);
    if (Required(v, "", file) != std::to_string(kPcmStoreVersion)) return std::nullopt;
    BuildState s;
    s.entries_checksum = Required(v, "entries_checksum", file);
    s.sample_rate = static_cast<int>(RequiredInt(v, "sample_rate", file));
    s.committed_entries = RequiredInt(v, "committed_entries", file);
    s.utterances = RequiredInt(v, "utterances", file);
    s.skipped = RequiredInt(v, "skipped", file);
    s.samples = RequiredInt(v, "samples", file);
    s.clipped = RequiredInt(v, "clipped_samples", file);
    s.index_bytes = RequiredInt(v, "index_bytes", file);
    s.skipped_bytes = RequiredInt(v, "skipped_bytes", file);
    s.complete = RequiredInt(v, "complete", file) == 1;
    if (s.complete) {
      s.data_checksum = Required(v, "data_checksum", file);
      s.index_checksum = Required(v, "index_checksum", file);
      s.chunk_bytes = RequiredInt(v, "chunk_bytes", file);
      s.chunks_checksum = Required(v, "chunks_checksum", file);
    }
    return s;
  } catch (const DataError& e) {
    ASV_LOG(Warning, "{}", e.what());
    return std::nullopt;
  }
}

std::string HeaderText(const BuildState& s) {
  return fmt::format(
      "{} {}\nsample_rate {}\nsample_format {}\nutterances {}\nsamples {}\nskipped {}\nclipped_samples {}\n"
      "data_checksum {}\nindex_checksum {}\nentries_checksum {}\nchunk_bytes {}\nchunks_checksum {}\n",
      kMagic, kPcmStoreVersion, s.sample_rate, kSampleFormat, s.utterances, s.samples, s.skipped, s.clipped,
      s.data_checksum, s.index_checksum, s.entries_checksum, s.chunk_bytes, s.chunks_checksum);
}

// The header of a complete store, parsed and checked. Throws DataError naming the file.
BuildState ReadHeader(const stdfs::path& file) {
  const auto v = ParseKeyValues(fs::ReadFile(file), file, kMagic);
  const std::string version = Required(v, "", file);
  if (version != std::to_string(kPcmStoreVersion)) {
    throw DataError(fmt::format("{}: PCM store format version {} is not supported (this build reads version {}); "
                                "build the store again",
                                file.string(), version, kPcmStoreVersion));
  }
  const std::string format = Required(v, "sample_format", file);
  if (format != kSampleFormat) {
    throw DataError(fmt::format("{}: sample_format '{}' is not supported (expected {})", file.string(), format,
                                kSampleFormat));
  }
  BuildState s;
  const std::int64_t rate = RequiredInt(v, "sample_rate", file);
  if (rate <= 0 || rate > 1'000'000) {
    throw DataError(fmt::format("{}: sample_rate {} is out of range", file.string(), rate));
  }
  s.sample_rate = static_cast<int>(rate);
  s.utterances = RequiredInt(v, "utterances", file);
  s.samples = RequiredInt(v, "samples", file);
  s.skipped = RequiredInt(v, "skipped", file);
  s.clipped = RequiredInt(v, "clipped_samples", file);
  s.data_checksum = Required(v, "data_checksum", file);
  s.index_checksum = Required(v, "index_checksum", file);
  s.entries_checksum = Required(v, "entries_checksum", file);
  // Optional: stores of an older asvcpp have no chunk checksums.
  if (v.count("chunk_bytes") > 0 || v.count("chunks_checksum") > 0) {
    s.chunk_bytes = RequiredInt(v, "chunk_bytes", file);
    s.chunks_checksum = Required(v, "chunks_checksum", file);
    if (s.chunk_bytes < 2 || s.chunk_bytes % 2 != 0) {
      throw DataError(fmt::format("{}: chunk_bytes {} must be even and >= 2", file.string(), s.chunk_bytes));
    }
  }
  s.complete = true;
  return s;
}

std::vector<PcmSkippedUtterance> ReadSkipped(const stdfs::path& file) {
  std::vector<PcmSkippedUtterance> skipped;
  std::error_code ec;
  if (!stdfs::exists(file, ec)) return skipped;
  const std::string text = fs::ReadFile(file);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    const std::size_t space = line.find(' ');
    skipped.push_back({std::string(line.substr(0, space)),
                       space == std::string_view::npos ? std::string() : std::string(line.substr(space + 1))});
  }
  return skipped;
}

std::string Sha256OfEntries(const std::vector<PcmStoreEntry>& entries, int sample_rate) {
  fs::Sha256Stream digest;
  const std::string head = fmt::format("{} {}\nsample_rate {}\n", kMagic, kPcmStoreVersion, sample_rate);
  digest.Update(head.data(), head.size());
  std::string line;
  for (const auto& e : entries) {
    line.assign(e.id).append("\t").append(e.source).append("\n");
    digest.Update(line.data(), line.size());
  }
  return digest.Finish();
}

void CheckEntries(const std::vector<PcmStoreEntry>& entries, const stdfs::path& folder) {
  if (entries.empty()) throw DataError(fmt::format("{}: no utterances to store", folder.string()));
  std::unordered_set<std::string_view> seen;
  seen.reserve(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string& id = entries[i].id;
    if (id.empty() || HasWhitespace(id)) {
      throw DataError(fmt::format("{}: utterance id '{}' (entry {}) is empty or contains whitespace", folder.string(),
                                  id, i + 1));
    }
    if (!seen.insert(id).second) {
      throw DataError(fmt::format("{}: utterance id '{}' appears more than once", folder.string(), id));
    }
  }
}

std::int64_t FileSize(const stdfs::path& file) {
  std::error_code ec;
  const auto size = stdfs::file_size(file, ec);
  return ec ? -1 : static_cast<std::int64_t>(size);
}

void RemoveIfPresent(const stdfs::path& path) {
  std::error_code ec;
  stdfs::remove_all(path, ec);
  if (ec) throw DataError(fmt::format("{}: cannot remove: {}", path.string(), ec.message()));
}

// A file of the partial build opened for appending after its committed length.
class AppendFile {
 public:
  AppendFile(stdfs::path path, std::int64_t committed) : path_(std::move(path)), size_(committed) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) Fail("cannot open for writing");
    if (::ftruncate(fd_, committed) != 0) Fail("cannot cut to its committed length");
    if (::lseek(fd_, committed, SEEK_SET) < 0) Fail("cannot seek");
  }
  ~AppendFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  void Append(const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::write(fd_, p, bytes);
      if (n < 0) {
        if (errno == EINTR) continue;
        Fail("write failed");
      }
      p += n;
      bytes -= static_cast<std::size_t>(n);
      size_ += n;
    }
  }
  void Append(const std::string& text) { Append(text.data(), text.size()); }
  void Sync() {
    if (::fsync(fd_) != 0) Fail("fsync failed");
  }
  std::int64_t size() const { return size_; }

 private:
  [[noreturn]] void Fail(const char* what) const {
    throw DataError(fmt::format("{}: {}: {}", path_.string(), what, std::strerror(errno)));
  }
  stdfs::path path_;
  std::int64_t size_ = 0;
  int fd_ = -1;
};

// An exclusive flock on the store's folder for the duration of a build: a second build of the
// same folder (another process, or another thread of this one) fails at once instead of
// interleaving its commits with the first one's.
class FolderLock {
 public:
  explicit FolderLock(const stdfs::path& folder) {
    fd_ = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw DataError(fmt::format("{}: cannot open the folder: {}", folder.string(), std::strerror(errno)));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      ::close(fd_);
      throw DataError(fmt::format("{}: {}", folder.string(),
                                  error == EWOULDBLOCK ? "another build of this PCM store is running"
                                                       : std::string("cannot lock the folder: ") + std::strerror(error)));
    }
  }
  ~FolderLock() { ::close(fd_); }  // releases the lock
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

// Feeds the first `bytes` bytes of `file` to `digest` (and its chunk checksums).
void HashPrefix(const stdfs::path& file, std::int64_t bytes, ChunkHasher& digest) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(fmt::format("{}: cannot open: {}", file.string(), std::strerror(errno)));
  std::vector<char> block(1 << 20);
  std::int64_t left = bytes;
  while (left > 0) {
    const ssize_t n = ::read(fd, block.data(), static_cast<std::size_t>(std::min<std::int64_t>(left, block.size())));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "unexpected end of file";
      ::close(fd);
      throw DataError(fmt::format("{}: cannot read its committed samples: {}", file.string(), why));
    }
    digest.Update(block.data(), static_cast<std::size_t>(n));
    left -= n;
  }
  ::close(fd);
}

// One decoded entry on its way to the writer.
struct Decoded {
  std::vector<std::int16_t> samples;
  std::optional<std::string> skip_reason;
  std::int64_t clipped = 0;
  bool resampled = false;
};

// Moves the complete partial build into place (see the header comment); idempotent, so a build
// interrupted in here finishes on its next run.
void PutInPlace(const stdfs::path& folder, const BuildState& state) {
  const stdfs::path partial = folder / kPcmPartialFolder;
  RemoveIfPresent(folder / kPcmHeaderFile);  // the older store (if any) is no longer complete
  fs::RemoveChecksumFile(folder / kPcmDataFile);
  const std::pair<stdfs::path, stdfs::path> moves[] = {
      {partial / kPcmDataFile, folder / kPcmDataFile},
      {partial / kPcmIndexFile, folder / kPcmIndexFile},
      {partial / kPartialSkipped, folder / kPcmSkippedFile},
      {partial / kPcmChunkFile, folder / kPcmChunkFile},
  };
  for (const auto& [from, to] : moves) {
    std::error_code ec;
    if (stdfs::exists(from, ec)) {
      stdfs::rename(from, to, ec);
      if (ec) throw DataError(fmt::format("{}: cannot rename to {}: {}", from.string(), to.string(), ec.message()));
    }
  }
  fs::WriteChecksumFile(folder / kPcmDataFile, state.data_checksum);
  fs::WriteFileAtomic(folder / kPcmHeaderFile, HeaderText(state));
  RemoveIfPresent(partial);
}

// True when the files of a complete partial build are all still there (in partial/ or, when an
// earlier run was interrupted while putting them in place, already moved).
bool CompleteBuildPresent(const stdfs::path& folder, const BuildState& state) {
  const stdfs::path partial = folder / kPcmPartialFolder;
  const auto there = [&](std::string_view from, std::string_view to, std::int64_t bytes) {
    const std::int64_t a = FileSize(partial / from);
    return a == bytes || (a < 0 && FileSize(folder / to) == bytes);
  };
  const auto chunks_there = [&] {
    const stdfs::path file =
        FileSize(partial / kPcmChunkFile) >= 0 ? partial / kPcmChunkFile : folder / kPcmChunkFile;
    try {
      return fs::FileChecksum(file) == state.chunks_checksum;
    } catch (const DataError&) {
      return false;
    }
  };
  return there(kPcmDataFile, kPcmDataFile, 2 * state.samples) &&
         there(kPcmIndexFile, kPcmIndexFile, state.index_bytes) &&
         there(kPartialSkipped, kPcmSkippedFile, state.skipped_bytes) && chunks_there();
}

// True when the chunk checksums of a complete store are there and match its header.
bool ChunksPresent(const stdfs::path& folder, const BuildState& header) {
  if (header.chunks_checksum.empty()) return false;
  try {
    return fs::FileChecksum(folder / kPcmChunkFile) == header.chunks_checksum;
  } catch (const DataError&) {
    return false;
  }
}

// A complete store without (valid) chunk checksums, e.g. of an older asvcpp: reads pcm.bin once,
// and when it matches the header's data checksum writes pcm.bin.chunks and the header with them.
// False when pcm.bin does not match (the store is then built again).
bool AddChunkChecksums(const stdfs::path& folder, BuildState& header, std::int64_t chunk_bytes) {
  ASV_LOG(Info, "{}: adding chunk checksums to a store without them (reading {} once)", folder.string(),
          (folder / kPcmDataFile).string());
  ChunkHasher digest(chunk_bytes);
  HashPrefix(folder / kPcmDataFile, 2 * header.samples, digest);
  std::string chunk_lines;
  if (digest.Finish(&chunk_lines) != header.data_checksum) {
    ASV_LOG(Warning, "{}: corrupt PCM store: {} does not match the data checksum of its header (building the store "
            "again)", folder.string(), (folder / kPcmDataFile).string());
    return false;
  }
  fs::WriteFileAtomic(folder / kPcmChunkFile, chunk_lines);
  header.chunk_bytes = chunk_bytes;
  header.chunks_checksum = fs::BytesChecksum(chunk_lines);
  fs::WriteFileAtomic(folder / kPcmHeaderFile, HeaderText(header));
  return true;
}

}  // namespace

std::string PcmStoreReport::Summary() const {
  std::string text = fmt::format("{}: {} utterances", folder.string(), Count(static_cast<std::int64_t>(utterances)));
  if (samples > 0) text += fmt::format(" ({} samples)", Count(samples));
  text += fmt::format(", {} skipped", Count(static_cast<std::int64_t>(skipped.size())));
  if (already_complete) return text + ", already complete";
  if (resumed_entries > 0) text += fmt::format(", resumed after {} entries", Count(static_cast<std::int64_t>(resumed_entries)));
  return text + fmt::format(", in {:.1f} s", wall_seconds);
}

PcmStoreReport BuildPcmStore(const std::vector<PcmStoreEntry>& entries, const stdfs::path& folder,
                             const PcmStoreOptions& options) {
  const auto start_time = std::chrono::steady_clock::now();
  if (options.sample_rate <= 0) {
    throw std::invalid_argument(fmt::format("BuildPcmStore: sample_rate must be positive, got {}", options.sample_rate));
  }
  if (options.threads < 1) {
    throw std::invalid_argument(fmt::format("BuildPcmStore: threads must be >= 1, got {}", options.threads));
  }
  if (options.chunk_utterances == 0) throw std::invalid_argument("BuildPcmStore: chunk_utterances must be >= 1");
  if (options.chunk_bytes < 2 || options.chunk_bytes % 2 != 0) {
    throw std::invalid_argument(
        fmt::format("BuildPcmStore: chunk_bytes must be even and >= 2, got {}", options.chunk_bytes));
  }
  CheckEntries(entries, folder);

  PcmStoreReport report;
  report.folder = folder;
  const std::string entries_checksum = Sha256OfEntries(entries, options.sample_rate);
  const stdfs::path partial = folder / kPcmPartialFolder;
  const stdfs::path progress_path = partial / kProgressFile;
  std::error_code ec;
  stdfs::create_directories(folder, ec);
  if (ec) throw DataError(fmt::format("{}: cannot create the folder: {}", folder.string(), ec.message()));
  const FolderLock lock(folder);

  const auto finish_report = [&](const BuildState& state) {
    report.utterances = static_cast<std::size_t>(state.utterances);
    report.samples = state.samples;
    report.clipped_samples = state.clipped;
    report.skipped = ReadSkipped(folder / kPcmSkippedFile);
    report.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    return report;
  };

  // A complete store of the same entries: nothing to do.
  if (stdfs::exists(folder / kPcmHeaderFile, ec)) {
    try {
      BuildState header = ReadHeader(folder / kPcmHeaderFile);
      if (header.entries_checksum == entries_checksum && header.sample_rate == options.sample_rate &&
          FileSize(folder / kPcmDataFile) == 2 * header.samples &&
          fs::FileChecksum(folder / kPcmIndexFile) == header.index_checksum &&
          (ChunksPresent(folder, header) || AddChunkChecksums(folder, header, options.chunk_bytes))) {
        RemoveIfPresent(partial);
        report.already_complete = true;
        return finish_report(header);
      }
    } catch (const DataError& e) {
      ASV_LOG(Warning, "{} (building the store again)", e.what());
    }
  }

  // An interrupted build of the same entries continues; anything else in partial/ goes.
  BuildState state;
  state.entries_checksum = entries_checksum;
  state.sample_rate = options.sample_rate;
  if (stdfs::exists(progress_path, ec)) {
    const auto saved = ReadProgress(progress_path);
    const bool same = saved && saved->entries_checksum == entries_checksum &&
                      saved->sample_rate == options.sample_rate &&
                      saved->committed_entries <= static_cast<std::int64_t>(entries.size());
    const bool intact =
        same && (saved->complete ? CompleteBuildPresent(folder, *saved)
                                 : FileSize(partial / kPcmDataFile) >= 2 * saved->samples &&
                                       FileSize(partial / kPcmIndexFile) >= saved->index_bytes &&
                                       FileSize(partial / kPartialSkipped) >= saved->skipped_bytes);
    if (intact) {
      state = *saved;
      ASV_LOG(Info, "{}: continuing an interrupted build after {} of {} entries", folder.string(),
              Count(state.committed_entries), Count(static_cast<std::int64_t>(entries.size())));
    } else {
      ASV_LOG(Info, "{}: discarding an interrupted build of {}", folder.string(),
              same ? "which files are missing or short" : "other entries or another sample rate");
    }
  }
  if (state.committed_entries == 0) RemoveIfPresent(partial);
  report.resumed_entries = static_cast<std::size_t>(state.committed_entries);

  if (!state.complete) {
    stdfs::create_directories(partial, ec);
    if (ec) throw DataError(fmt::format("{}: cannot create the folder: {}", partial.string(), ec.message()));
    AppendFile data(partial / kPcmDataFile, 2 * state.samples);
    AppendFile index(partial / kPcmIndexFile, state.index_bytes);
    AppendFile skipped(partial / kPartialSkipped, state.skipped_bytes);
    ChunkHasher digest(options.chunk_bytes);
    if (state.samples > 0) HashPrefix(partial / kPcmDataFile, 2 * state.samples, digest);

    const std::size_t first = static_cast<std::size_t>(state.committed_entries);
    const std::size_t remaining = entries.size() - first;
    audio::DecodeOptions decode_options;
    decode_options.sample_rate = options.sample_rate;
    audio::ResampleReporter resample_reporter(folder.string());
    base::ProgressOptions progress_options;
    progress_options.mode = options.progress;
    progress_options.unit = "utt";
    base::Progress progress(folder.string(), static_cast<std::int64_t>(remaining), progress_options);
    ASV_LOG(Info, "{}: decoding {} utterances at {} Hz with {} thread{}", folder.string(),
            Count(static_cast<std::int64_t>(remaining)), options.sample_rate, options.threads,
            options.threads == 1 ? "" : "s");

    auto produce = [&](std::size_t k) {
      const PcmStoreEntry& entry = entries[first + k];
      Decoded out;
      audio::Audio audio;
      try {
        audio = audio::Decode(entry.source, decode_options);
      } catch (const DataError& e) {
        out.skip_reason = OneLine(e.what());
        return out;
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {
        throw StageError(fmt::format("{}: utterance {}: {}", folder.string(), entry.id, e.what()));
      }
      resample_reporter.Note(entry.id, audio);
      out.resampled = audio.resampled;
      out.samples.resize(audio.samples.size());
      for (std::size_t j = 0; j < audio.samples.size(); ++j) {
        const float v = std::nearbyint(audio.samples[j]);
        if (v < -32768.0f || v > 32767.0f) ++out.clipped;
        out.samples[j] = static_cast<std::int16_t>(std::clamp(v, -32768.0f, 32767.0f));
      }
      return out;
    };

    std::string index_buffer;
    std::string skipped_buffer;
    std::size_t warned = 0;
    auto commit = [&](std::size_t committed) {
      index.Append(index_buffer);
      skipped.Append(skipped_buffer);
      index_buffer.clear();
      skipped_buffer.clear();
      data.Sync();
      index.Sync();
      skipped.Sync();
      state.committed_entries = static_cast<std::int64_t>(committed);
      state.index_bytes = index.size();
      state.skipped_bytes = skipped.size();
      fs::WriteFileAtomic(progress_path, ProgressText(state));
      if (options.after_commit) options.after_commit(committed);
    };

    auto consume = [&](std::size_t k, Decoded&& d) {
      const std::size_t i = first + k;
      const std::string& id = entries[i].id;
      if (d.skip_reason) {
        if (warned < options.max_warnings) {
          ASV_LOG(Warning, "{}: skipping utterance {}: {}", folder.string(), id, *d.skip_reason);
        } else if (warned == options.max_warnings) {
          ASV_LOG(Warning, "{}: more utterances skipped; all are listed in {}", folder.string(),
                  (folder / kPcmSkippedFile).string());
        }
        ++warned;
        skipped_buffer += fmt::format("{} {}\n", id, *d.skip_reason);
        ++state.skipped;
      } else {
        data.Append(d.samples.data(), d.samples.size() * sizeof(std::int16_t));
        const auto n = static_cast<std::int64_t>(d.samples.size());
        index_buffer += fmt::format("{} {} {}\n", id, state.samples, n);
        digest.Update(d.samples.data(), d.samples.size() * sizeof(std::int16_t));
        state.samples += n;
        state.clipped += d.clipped;
        ++state.utterances;
        if (d.resampled) ++report.resampled;
      }
      progress.Add(1);
      if ((i + 1) % options.chunk_utterances == 0 || i + 1 == entries.size()) commit(i + 1);
    };

    base::ParallelForOrdered<Decoded>(remaining, options.threads, 0, produce, consume);
    progress.Finish();
    resample_reporter.LogSummary();

    state.complete = true;
    std::string chunk_lines;
    state.data_checksum = digest.Finish(&chunk_lines);
    fs::WriteFileAtomic(partial / kPcmChunkFile, chunk_lines);
    state.chunk_bytes = options.chunk_bytes;
    state.chunks_checksum = fs::BytesChecksum(chunk_lines);
    state.index_checksum = fs::FileChecksum(partial / kPcmIndexFile);
    fs::WriteFileAtomic(progress_path, ProgressText(state));
  }

  if (state.utterances == 0) {
    const auto skipped = ReadSkipped(partial / kPartialSkipped);
    throw StageError(fmt::format("{}: no utterance could be stored ({} skipped); the first: {}: {}", folder.string(),
                                 Count(state.skipped), skipped.empty() ? "?" : skipped.front().utterance,
                                 skipped.empty() ? "?" : skipped.front().reason));
  }
  PutInPlace(folder, state);
  ASV_LOG(Info, "{}", finish_report(state).Summary());
  return report;
}

PcmStore PcmStore::Open(const stdfs::path& folder) {
  std::error_code ec;
  if (!stdfs::is_directory(folder, ec)) {
    throw DataError(fmt::format("{}: no PCM store here (not a folder)", folder.string()));
  }
  const stdfs::path header_path = folder / kPcmHeaderFile;
  if (!stdfs::exists(header_path, ec)) {
    if (stdfs::exists(folder / kPcmPartialFolder, ec)) {
      throw DataError(fmt::format("{}: incomplete PCM store: its build was interrupted ({} holds its progress); run "
                                  "the build again to complete it",
                                  folder.string(), (folder / kPcmPartialFolder).string()));
    }
    throw DataError(fmt::format("{}: not a PCM store ({} is missing)", folder.string(), header_path.string()));
  }
  const BuildState header = ReadHeader(header_path);

  PcmStore store;
  store.folder_ = folder;
  store.sample_rate_ = header.sample_rate;
  store.total_samples_ = header.samples;
  store.data_checksum_ = header.data_checksum;

  const stdfs::path index_path = folder / kPcmIndexFile;
  const std::string index = fs::ReadFile(index_path);
  if (fs::BytesChecksum(index) != header.index_checksum) {
    throw DataError(fmt::format("{}: corrupt PCM store: {} does not match the index checksum of {}; build the "
                                "store again",
                                folder.string(), index_path.string(), header_path.string()));
  }
  const auto reserve = static_cast<std::size_t>(std::min<std::int64_t>(header.utterances, 1 << 24));
  store.ids_.reserve(reserve);
  store.offsets_.reserve(reserve + 1);
  store.offsets_.push_back(0);
  std::size_t pos = 0;
  std::size_t line_no = 0;
  while (pos < index.size()) {
    std::size_t end = index.find('\n', pos);
    if (end == std::string::npos) end = index.size();
    const std::string_view line(index.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::size_t a = line.find(' ');
    const std::size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    const auto offset = b == std::string_view::npos ? std::nullopt : ParseInt(line.substr(a + 1, b - a - 1));
    const auto length = b == std::string_view::npos ? std::nullopt : ParseInt(line.substr(b + 1));
    if (a == 0 || !offset || !length || *length < 1 || *offset != store.offsets_.back()) {
      throw DataError(fmt::format("{}:{}: malformed index line '{}' (expected '<utterance> <offset> <samples>' with "
                                  "offset {} and samples >= 1)",
                                  index_path.string(), line_no, line, store.offsets_.back()));
    }
    store.ids_.emplace_back(line.substr(0, a));
    store.offsets_.push_back(*offset + *length);
  }
  if (static_cast<std::int64_t>(store.ids_.size()) != header.utterances ||
      store.offsets_.back() != header.samples) {
    throw DataError(fmt::format("{}: {} lists {} utterances of {} samples but {} says {} of {}", folder.string(),
                                index_path.string(), store.ids_.size(), store.offsets_.back(), header_path.string(),
                                header.utterances, header.samples));
  }
  store.by_id_.reserve(store.ids_.size());
  for (std::size_t i = 0; i < store.ids_.size(); ++i) {
    if (!store.by_id_.emplace(store.ids_[i], i).second) {
      throw DataError(fmt::format("{}: utterance {} appears twice", index_path.string(), store.ids_[i]));
    }
  }

  const stdfs::path data_path = folder / kPcmDataFile;
  const std::int64_t expected = 2 * header.samples;
  const std::int64_t size = FileSize(data_path);
  if (size != expected) {
    throw DataError(fmt::format(
        "{}: corrupt PCM store: {} {}; {} records {} samples ({} bytes)", folder.string(), data_path.string(),
        size < 0 ? std::string("is missing") : fmt::format("has {} bytes ({})", size, size < expected ? "truncated" : "too long"),
        header_path.string(), header.samples, expected));
  }
  if (expected > 0) {
    const int fd = ::open(data_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw DataError(fmt::format("{}: cannot open: {}", data_path.string(), std::strerror(errno)));
    void* p = ::mmap(nullptr, static_cast<std::size_t>(expected), PROT_READ, MAP_SHARED, fd, 0);
    const int mmap_errno = errno;
    ::close(fd);
    if (p == MAP_FAILED) {
      throw DataError(fmt::format("{}: cannot map into memory: {}", data_path.string(), std::strerror(mmap_errno)));
    }
    ::madvise(p, static_cast<std::size_t>(expected), MADV_RANDOM);  // segments, not streams: no read-ahead
    store.samples_ = static_cast<const std::int16_t*>(p);
    store.mapped_bytes_ = static_cast<std::size_t>(expected);
  }

  if (header.chunks_checksum.empty()) {
    // A store of an older asvcpp: no chunk checksums to check reads against, so all of it now.
    ASV_LOG(Info, "{}: checking all of {} (a store without chunk checksums; its build run again adds them)",
            folder.string(), data_path.string());
    store.VerifyData();
    return store;
  }
  const stdfs::path chunk_path = folder / kPcmChunkFile;
  const std::string chunk_text = fs::ReadFile(chunk_path);
  if (fs::BytesChecksum(chunk_text) != header.chunks_checksum) {
    throw DataError(fmt::format("{}: corrupt PCM store: {} does not match the chunks checksum of {}; build the "
                                "store again",
                                folder.string(), chunk_path.string(), header_path.string()));
  }
  store.chunk_bytes_ = header.chunk_bytes;
  store.num_chunks_ = (expected + header.chunk_bytes - 1) / header.chunk_bytes;
  store.chunk_sums_.reserve(static_cast<std::size_t>(store.num_chunks_));
  for (std::size_t at = 0; at < chunk_text.size();) {
    std::size_t end = chunk_text.find('\n', at);
    if (end == std::string::npos) end = chunk_text.size();
    store.chunk_sums_.push_back(fmt::format("{}:{}", fs::kChecksumAlgorithm, chunk_text.substr(at, end - at)));
    at = end + 1;
  }
  if (static_cast<std::int64_t>(store.chunk_sums_.size()) != store.num_chunks_) {
    throw DataError(fmt::format("{}: lists {} chunk checksums, but {} bytes in chunks of {} make {}",
                                chunk_path.string(), store.chunk_sums_.size(), expected, header.chunk_bytes,
                                store.num_chunks_));
  }
  store.chunk_checked_ = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(store.num_chunks_));
  for (std::int64_t c = 0; c < store.num_chunks_; ++c) store.chunk_checked_[c].store(false);
  return store;
}

PcmStore::PcmStore(PcmStore&& other) noexcept
    : folder_(std::move(other.folder_)),
      sample_rate_(other.sample_rate_),
      total_samples_(other.total_samples_),
      data_checksum_(std::move(other.data_checksum_)),
      ids_(std::move(other.ids_)),
      offsets_(std::move(other.offsets_)),
      by_id_(std::move(other.by_id_)),
      samples_(std::exchange(other.samples_, nullptr)),
      mapped_bytes_(std::exchange(other.mapped_bytes_, 0)),
      chunk_bytes_(other.chunk_bytes_),
      num_chunks_(std::exchange(other.num_chunks_, 0)),
      chunk_sums_(std::move(other.chunk_sums_)),
      chunk_checked_(std::move(other.chunk_checked_)) {}

PcmStore& PcmStore::operator=(PcmStore&& other) noexcept {
  if (this != &other) {
    Unmap();
    folder_ = std::move(other.folder_);
    sample_rate_ = other.sample_rate_;
    total_samples_ = other.total_samples_;
    data_checksum_ = std::move(other.data_checksum_);
    ids_ = std::move(other.ids_);
    offsets_ = std::move(other.offsets_);
    by_id_ = std::move(other.by_id_);
    samples_ = std::exchange(other.samples_, nullptr);
    mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
    chunk_bytes_ = other.chunk_bytes_;
    num_chunks_ = std::exchange(other.num_chunks_, 0);
    chunk_sums_ = std::move(other.chunk_sums_);
    chunk_checked_ = std::move(other.chunk_checked_);
  }
  return *this;
}

PcmStore::~PcmStore() { Unmap(); }

void PcmStore::Unmap() noexcept {
  if (samples_ != nullptr) ::munmap(const_cast<std::int16_t*>(samples_), mapped_bytes_);
  samples_ = nullptr;
  mapped_bytes_ = 0;
}

const std::string& PcmStore::Id(std::size_t i) const {
  if (i >= ids_.size()) {
    throw std::out_of_range(fmt::format("PcmStore::Id: utterance {} of {}", i, ids_.size()));
  }
  return ids_[i];
}

std::int64_t PcmStore::NumSamples(std::size_t i) const {
  if (i >= ids_.size()) {
    throw std::out_of_range(fmt::format("PcmStore::NumSamples: utterance {} of {}", i, ids_.size()));
  }
  return offsets_[i + 1] - offsets_[i];
}

std::optional<std::size_t> PcmStore::Find(std::string_view id) const {
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second;
}

void PcmStore::Read(std::size_t i, std::int64_t start, std::int64_t count, float* out) const {
  const std::int64_t length = NumSamples(i);
  if (start < 0 || count < 0 || start > length || count > length - start) {
    throw std::out_of_range(fmt::format("PcmStore::Read: samples [{}, {}) of utterance {} ({}), which has {}", start,
                                        start + count, i, ids_[i], length));
  }
  if (count > 0 && num_chunks_ > 0) {
    const std::int64_t first_byte = 2 * (offsets_[i] + start);
    const std::int64_t last_byte = 2 * (offsets_[i] + start + count) - 1;
    for (std::int64_t c = first_byte / chunk_bytes_; c <= last_byte / chunk_bytes_; ++c) {
      if (!chunk_checked_[c].load(std::memory_order_acquire)) VerifyChunk(c, i);
    }
  }
  const std::int16_t* src = samples_ + offsets_[i] + start;
  for (std::int64_t k = 0; k < count; ++k) out[k] = static_cast<float>(src[k]);
}

void PcmStore::VerifyChunk(std::int64_t c, std::size_t utterance) const {
  const std::int64_t begin = c * chunk_bytes_;
  const std::int64_t end = std::min<std::int64_t>(begin + chunk_bytes_, static_cast<std::int64_t>(mapped_bytes_));
  const char* bytes = reinterpret_cast<const char*>(samples_) + begin;
  const std::string actual = fs::BytesChecksum(std::string_view(bytes, static_cast<std::size_t>(end - begin)));
  if (actual != chunk_sums_[static_cast<std::size_t>(c)]) {
    throw DataError(fmt::format(
        "{}: corrupt PCM store: bytes {}-{} of {} (chunk {} of {}, read for utterance {}) do not match their "
        "checksum in {}; build the store again (remove {} and run its build, e.g. stage 1, again)",
        folder_.string(), begin, end - 1, kPcmDataFile, c + 1, num_chunks_, ids_[utterance], kPcmChunkFile,
        (folder_ / kPcmHeaderFile).string()));
  }
  chunk_checked_[c].store(true, std::memory_order_release);
}

std::int64_t PcmStore::VerifiedChunks() const {
  std::int64_t n = 0;
  for (std::int64_t c = 0; c < num_chunks_; ++c) n += chunk_checked_[c].load(std::memory_order_relaxed) ? 1 : 0;
  return n;
}

void PcmStore::VerifyData() const {
  const stdfs::path data_path = folder_ / kPcmDataFile;
  const std::string actual = fs::FileChecksum(data_path);
  if (actual != data_checksum_) {
    throw DataError(fmt::format("{}: corrupt PCM store: {} has checksum {} but {} records {}; build the store again",
                                folder_.string(), data_path.string(), actual, (folder_ / kPcmHeaderFile).string(),
                                data_checksum_));
  }
  for (std::int64_t c = 0; c < num_chunks_; ++c) chunk_checked_[c].store(true, std::memory_order_release);
}

}  // namespace asv::data
