#include "asvcpp/db/file_checksum.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "asvcpp/base/error.h"

namespace asv::db {

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
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw fail("OpenSSL could not start a SHA-256 digest");
  }
  std::vector<unsigned char> block(1 << 20);
  for (;;) {
    const std::size_t n = std::fread(block.data(), 1, block.size(), in.get());
    if (n > 0 && EVP_DigestUpdate(ctx.get(), block.data(), n) != 1) throw fail("OpenSSL digest update failed");
    if (n < block.size()) {
      if (std::ferror(in.get())) throw fail(std::strerror(errno));
      break;
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx.get(), digest, &length) != 1) throw fail("OpenSSL digest failed");
  std::string out(kChecksumAlgorithm);
  out += ':';
  for (unsigned int i = 0; i < length; ++i) out += fmt::format("{:02x}", digest[i]);
  return out;
}

}  // namespace asv::db
