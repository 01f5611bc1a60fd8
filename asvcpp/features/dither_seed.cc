#include "asvcpp/features/dither_seed.h"

namespace asv::features {

std::uint64_t DitherSeed(std::string_view utterance_id) {
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (const char c : utterance_id) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ull;  // FNV-1a 64 prime
  }
  return hash;
}

}  // namespace asv::features
