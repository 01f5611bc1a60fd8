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

/// Checks `bytes`, the contents of `file`, against its checksum file. Returns false when there
/// is none (files written before checksums existed, or copied without it); true when it matches.
/// Throws DataError naming both files when it does not match (the file is corrupt) or the
/// checksum file is malformed.
bool VerifyChecksum(const std::filesystem::path& file, std::string_view bytes);

/// VerifyChecksum on the file as it is on disk (read in blocks, not held in memory).
bool VerifyFileChecksum(const std::filesystem::path& file);

}  // namespace asv::fs
