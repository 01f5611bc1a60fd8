#include "asvcpp/base/checksum.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "asvcpp/base/error.h"
#include "asvcpp/base/fs.h"
#include "asvcpp/base/sha256_stream.h"

namespace asv::fs {
namespace {

using DigestPtr = std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)>;

// A SHA-256 digest in progress; `fail` makes the exception for a failure.
template <class Fail>
DigestPtr StartDigest(const Fail& fail) {
  DigestPtr ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw fail("OpenSSL could not start a SHA-256 digest");
  }
  return ctx;
}

template <class Fail>
std::string FinishDigest(EVP_MD_CTX* ctx, const Fail& fail) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &length) != 1) throw fail("OpenSSL digest failed");
  std::string out(kChecksumAlgorithm);
  out += ':';
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

// The hex digits of a checksum file's first field, as "sha256:<hex>"; empty when malformed.
std::string ParseChecksumFile(const std::string& text) {
  const std::size_t end = text.find_first_of(" \t\n");
  const std::string hex = text.substr(0, end);
  if (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string::npos) return "";
  return std::string(kChecksumAlgorithm) + ":" + hex;
}

std::mutex policy_mutex;
std::shared_ptr<const ChecksumPolicy> current_policy;  // null: no lookup, unverified files allowed

std::shared_ptr<const ChecksumPolicy> CurrentPolicy() {
  std::lock_guard<std::mutex> lock(policy_mutex);
  return current_policy;
}

// Compares `actual` with the checksum file of `file`, else with the policy's recorded checksum;
// see VerifyChecksum.
bool Compare(const std::filesystem::path& file, const std::function<std::string()>& actual) {
  const std::filesystem::path sidecar = ChecksumFilePath(file);
  std::error_code ec;
  std::string recorded;
  std::string source;
  if (std::filesystem::exists(sidecar, ec)) {
    recorded = ParseChecksumFile(ReadFile(sidecar));
    if (recorded.empty()) {
      throw DataError(fmt::format("{}: malformed checksum file (expected '<64 hex digits>  <file name>')",
                                  sidecar.string()));
    }
    source = fmt::format("when it was written ({})", sidecar.string());
  } else {
    const auto policy = CurrentPolicy();
    if (!policy || !policy->lookup) return false;
    const auto found = policy->lookup(std::filesystem::absolute(file, ec));
    if (!found) return false;
    recorded = *found;
    source = fmt::format("in the experiment database ({} is missing)", sidecar.filename().string());
  }
  const std::string sum = actual();
  if (sum != recorded) {
    throw DataError(fmt::format("{}: corrupt: its SHA-256 is {} but {} was recorded {}; restore it or write it again",
                                file.string(), sum.substr(kChecksumAlgorithm.size() + 1),
                                recorded.substr(recorded.find(':') + 1), source));
  }
  return true;
}

}  // namespace

std::string FileChecksum(const std::filesystem::path& file) {
  const auto fail = [&](const std::string& why) {
    return DataError(fmt::format("{}: cannot compute its checksum: {}", file.string(), why));
  };
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    throw fail(std::filesystem::exists(file, ec) ? "not a regular file" : "no such file");
  }
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> in(std::fopen(file.c_str(), "rb"), &std::fclose);
  if (!in) throw fail(std::strerror(errno));
  const DigestPtr ctx = StartDigest(fail);
  std::vector<unsigned char> block(1 << 20);
  for (;;) {
    const std::size_t n = std::fread(block.data(), 1, block.size(), in.get());
    if (n > 0 && EVP_DigestUpdate(ctx.get(), block.data(), n) != 1) throw fail("OpenSSL digest update failed");
    if (n < block.size()) {
      if (std::ferror(in.get())) throw fail(std::strerror(errno));
      break;
    }
  }
  return FinishDigest(ctx.get(), fail);
}

std::string BytesChecksum(std::string_view bytes) {
  const auto fail = [](const std::string& why) { return Error(kExitFailure, "checksum: " + why); };
  const DigestPtr ctx = StartDigest(fail);
  if (EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size()) != 1) throw fail("OpenSSL digest update failed");
  return FinishDigest(ctx.get(), fail);
}

std::filesystem::path ChecksumFilePath(const std::filesystem::path& file) {
  return file.string() + "." + std::string(kChecksumAlgorithm);
}

void WriteChecksumFile(const std::filesystem::path& file, const std::string& checksum) {
  const std::string prefix = std::string(kChecksumAlgorithm) + ":";
  if (checksum.rfind(prefix, 0) != 0 || ParseChecksumFile(checksum.substr(prefix.size())).empty()) {
    throw std::invalid_argument(fmt::format("WriteChecksumFile: '{}' is not a {} checksum", checksum, prefix));
  }
  WriteFileAtomic(ChecksumFilePath(file), fmt::format("{}  {}\n", checksum.substr(prefix.size()),
                                                      file.filename().string()));
}

void RemoveChecksumFile(const std::filesystem::path& file) {
  std::error_code ec;
  std::filesystem::remove(ChecksumFilePath(file), ec);
  if (ec) throw DataError(fmt::format("{}: cannot remove: {}", ChecksumFilePath(file).string(), ec.message()));
}

bool VerifyChecksum(const std::filesystem::path& file, std::string_view bytes) {
  return Compare(file, [&] { return BytesChecksum(bytes); });
}

void VerifyOrRefuse(const std::filesystem::path& file, std::string_view bytes) {
  if (VerifyChecksum(file, bytes)) return;
  const auto policy = CurrentPolicy();
  if (!policy || policy->allow_unverified) return;
  throw DataError(fmt::format(
      "{}: cannot be verified: it has no checksum file ({}) and the experiment database records no checksum of "
      "it; restore the checksum file{}",
      file.string(), ChecksumFilePath(file).filename().string(),
      policy->how_to_allow.empty() ? std::string() : ", or " + policy->how_to_allow + " to use it anyway"));
}

ScopedChecksumPolicy::ScopedChecksumPolicy(ChecksumPolicy policy) {
  auto installed = std::make_shared<const ChecksumPolicy>(std::move(policy));
  std::lock_guard<std::mutex> lock(policy_mutex);
  previous_ = std::move(current_policy);
  current_policy = std::move(installed);
}

ScopedChecksumPolicy::~ScopedChecksumPolicy() {
  std::lock_guard<std::mutex> lock(policy_mutex);
  current_policy = std::move(previous_);
}

bool VerifyFileChecksum(const std::filesystem::path& file) {
  return Compare(file, [&] { return FileChecksum(file); });
}

struct Sha256Stream::Impl {
  DigestPtr ctx{nullptr, &EVP_MD_CTX_free};
};

namespace {
Error StreamFailure(const std::string& why) { return Error(kExitFailure, "sha256 stream: " + why); }
}  // namespace

Sha256Stream::Sha256Stream() : impl_(std::make_unique<Impl>()) { impl_->ctx = StartDigest(StreamFailure); }
Sha256Stream::~Sha256Stream() = default;
Sha256Stream::Sha256Stream(Sha256Stream&&) noexcept = default;
Sha256Stream& Sha256Stream::operator=(Sha256Stream&&) noexcept = default;

void Sha256Stream::Update(const void* data, std::size_t bytes) {
  if (!impl_ || !impl_->ctx) throw StreamFailure("Update after Finish");
  if (bytes > 0 && EVP_DigestUpdate(impl_->ctx.get(), data, bytes) != 1) {
    throw StreamFailure("OpenSSL digest update failed");
  }
}

std::string Sha256Stream::Finish() {
  if (!impl_ || !impl_->ctx) throw StreamFailure("Finish called twice");
  std::string sum = FinishDigest(impl_->ctx.get(), StreamFailure);
  impl_->ctx.reset();
  return sum;
}

}  // namespace asv::fs
