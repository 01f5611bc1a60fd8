#include "asvcpp/train/onednn_cache.h"

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace asv::train {

bool BoundOneDnnPrimitiveCache(int capacity) {
  if (capacity < 0) {
    throw std::invalid_argument("oneDNN primitive cache capacity must be >= 0, got " + std::to_string(capacity));
  }
  if (std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") != nullptr ||
      std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY") != nullptr) {
    return false;
  }
  return ::setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", std::to_string(capacity).c_str(), 1) == 0;
}

bool BoundIdeepCache(int capacity) {
  if (capacity < 0) {
    throw std::invalid_argument("ideep cache capacity must be >= 0, got " + std::to_string(capacity));
  }
  if (std::getenv("LRU_CACHE_CAPACITY") != nullptr) return false;
  return ::setenv("LRU_CACHE_CAPACITY", std::to_string(capacity).c_str(), 1) == 0;
}

// oneDNN's C API (dnnl.h), found at run time: dnnl_status_t is an int enum, dnnl_success 0.
using GetCapacity = int (*)(int*);
using SetCapacity = int (*)(int);

std::optional<int> OneDnnPrimitiveCacheCapacity() {
  void* symbol = ::dlsym(RTLD_DEFAULT, "dnnl_get_primitive_cache_capacity");
  if (symbol == nullptr) return std::nullopt;
  int capacity = -1;
  if (reinterpret_cast<GetCapacity>(symbol)(&capacity) != 0) return std::nullopt;
  return capacity;
}

bool ClearOneDnnPrimitiveCache() {
  static void* const set_symbol = ::dlsym(RTLD_DEFAULT, "dnnl_set_primitive_cache_capacity");
  if (set_symbol == nullptr) return false;
  const auto capacity = OneDnnPrimitiveCacheCapacity();
  if (!capacity) return false;
  if (*capacity == 0) return true;
  const auto set = reinterpret_cast<SetCapacity>(set_symbol);
  return set(0) == 0 && set(*capacity) == 0;
}

}  // namespace asv::train
