// LibTorch's exceptions as asvcpp's errors: a message without LibTorch's C++ backtrace, and an
// out-of-memory (CUDA's "CUDA out of memory", the CPU allocator's "can't allocate memory" or
// "not enough memory", std::bad_alloc) named as such with what to lower.
#pragma once

#include <string>

namespace asv::train {

/// Whether `message` (an exception's text) reports a failed allocation of LibTorch's CUDA or CPU
/// allocator.
bool IsOutOfMemoryText(const std::string& message);

/// Call only inside a catch block. Rethrows the exception being handled as asvcpp's own:
///  * an out-of-memory (c10::Error whose text IsOutOfMemoryText, or std::bad_alloc) becomes
///    StageError("<what> ran out of memory on <device>: <LibTorch's text>; <advice>");
///  * any other c10::Error becomes StageError with its text without the C++ backtrace;
///  * everything else (asvcpp's own errors included) is rethrown unchanged.
/// `what` names the work (e.g. "stage 5 (train)"); `device` is "cpu" or "cuda:N"; `advice` says
/// which settings to lower.
[[noreturn]] void RethrowAsAsvError(const std::string& what, const std::string& device, const std::string& advice);

}  // namespace asv::train
