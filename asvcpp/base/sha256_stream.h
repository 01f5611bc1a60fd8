// A SHA-256 digest computed piece by piece, for data written in many parts (the samples of a
// PCM store, asvcpp/data/pcm_store.h), in the "sha256:<hex>" form of FileChecksum
// (asvcpp/base/checksum.h): hashing the parts in order gives the checksum of the whole file.
//
//   fs::Sha256Stream digest;
//   digest.Update(part1.data(), part1.size());
//   digest.Update(part2.data(), part2.size());
//   const std::string sum = digest.Finish();  // == FileChecksum(file holding part1 + part2)
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace asv::fs {

class Sha256Stream {
 public:
  /// Starts an empty digest. Throws Error (exit status kExitFailure) when OpenSSL cannot.
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(Sha256Stream&&) noexcept;
  Sha256Stream& operator=(Sha256Stream&&) noexcept;

  /// Adds `bytes` bytes at `data`. Throws Error when OpenSSL fails or after Finish().
  void Update(const void* data, std::size_t bytes);

  /// "sha256:<64 lowercase hex digits>" of everything added. The stream is spent afterwards
  /// (Update and Finish throw Error).
  std::string Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace asv::fs
