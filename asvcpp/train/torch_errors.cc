#include "asvcpp/train/torch_errors.h"

#include <c10/util/Exception.h>
#include <fmt/format.h>

#include <exception>
#include <new>

#include "asvcpp/base/error.h"

namespace asv::train {

bool IsOutOfMemoryText(const std::string& message) {
  return message.find("out of memory") != std::string::npos || message.find("not enough memory") != std::string::npos ||
         message.find("can't allocate memory") != std::string::npos;
}

void RethrowAsAsvError(const std::string& what, const std::string& device, const std::string& advice) {
  const auto out_of_memory = [&](const std::string& text) {
    return StageError(fmt::format("{} ran out of memory on {}: {}; {}", what, device, text, advice));
  };
  try {
    throw;
  } catch (const c10::Error& e) {
    std::string text = e.what_without_backtrace();
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    if (IsOutOfMemoryText(text)) throw out_of_memory(text);
    throw StageError(text);
  } catch (const std::bad_alloc& e) {
    throw out_of_memory(fmt::format("an allocation failed ({})", e.what()));
  }
}

}  // namespace asv::train
