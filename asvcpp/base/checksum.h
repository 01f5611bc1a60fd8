// Checksums of files: SHA-256 (OpenSSL's libcrypto), written as "sha256:<hex>". The experiment
// database stores one per artifact (artifacts.checksum), and files that are read back later
// (checkpoints, embeddings) carry a checksum file beside them, "<file>.sha256" in the format of
// coreutils' sha256sum ("<hex>  <file name>", so `sha256sum -c` checks it too), which readers
// verify: a flipped byte is an error naming the file, not a network that silently "diverges".
//
//   const std::string sum = asv::fs::FileChecksum("exp/networks/epoch.3.pt");
//   // "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace asv::fs {

/// Name of the algorithm; the prefix of every checksum returned here.
inline constexpr std::string_view kChecksumAlgorithm = "sha256";

/// "sha256:<64 lowercase hex digits>": the SHA-256 digest of the bytes of `file`, read in 1 MiB
/// blocks (about 0.4 GB/s from the page cache on a shared 2-core VM). Throws DataError naming
/// `file` when it does not exist, is not a regular file or cannot be read to its end.
std::string FileChecksum(const std::filesystem::path& file);

/// The same checksum of bytes held in memory.
std::string BytesChecksum(std::string_view bytes);

/// "<file>.sha256", the checksum file of `file`.
std::filesystem::path ChecksumFilePath(const std::filesystem::path& file);

/// Writes ChecksumFilePath(file) for `checksum` (as FileChecksum returns it), atomically. Throws
/// DataError when it cannot be written, std::invalid_argument for a checksum of another form.
void WriteChecksumFile(const std::filesystem::path& file, const std::string& checksum);

/// Removes the checksum file of `file` if there is one (before `file` is rewritten, so that a
/// crash between the two writes never pairs new bytes with an old checksum). Throws DataError
/// when it exists and cannot be removed.
void RemoveChecksumFile(const std::filesystem::path& file);

/// What a file's checksum is checked against when it has no checksum file, and whether such a
/// file may be used unverified (VerifyOrRefuse). asvrun installs one for a run: the experiment
/// database's artifacts.checksum as the lookup, and the run's setting as `allow_unverified`.
struct ChecksumPolicy {
  /// "sha256:<hex>" recorded for `file` (an absolute path as written), or nullopt.
  std::function<std::optional<std::string>(const std::filesystem::path& file)> lookup;
  bool allow_unverified = true;
  /// What the user can do to use an unverifiable file anyway, appended to VerifyOrRefuse's error
  /// (e.g. "set network.allow_unverified_checkpoints = True").
  std::string how_to_allow;
};

/// Installs `policy` for the whole process while it lives (the previous one is restored after).
/// Without any, there is no lookup and unverified files are allowed.
class ScopedChecksumPolicy {
 public:
  explicit ScopedChecksumPolicy(ChecksumPolicy policy);
  ~ScopedChecksumPolicy();
  ScopedChecksumPolicy(const ScopedChecksumPolicy&) = delete;
  ScopedChecksumPolicy& operator=(const ScopedChecksumPolicy&) = delete;

 private:
  std::shared_ptr<const ChecksumPolicy> previous_;
};

/// Checks `bytes`, the contents of `file`, against its checksum file, or when that is missing
/// against the checksum the installed policy's lookup finds (the experiment database). Returns
/// false when there is neither (files written before checksums existed, or copied without it);
/// true when one matches. Throws DataError naming the file and where the expected checksum came
/// from when it does not match (the file is corrupt), or when the checksum file is malformed.
bool VerifyChecksum(const std::filesystem::path& file, std::string_view bytes);

/// VerifyChecksum, and a file with neither a checksum file nor a recorded checksum is refused
/// (DataError naming both sources and the policy's how_to_allow) unless the installed policy
/// allows unverified files. For files a run must not use unverified: checkpoints.
void VerifyOrRefuse(const std::filesystem::path& file, std::string_view bytes);

/// VerifyChecksum on the file as it is on disk (read in blocks, not held in memory).
bool VerifyFileChecksum(const std::filesystem::path& file);

}  // namespace asv::fs
