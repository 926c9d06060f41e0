// Turns a GPU runtime error into a gufo::Error that names the operation and problem, the
// failed call and file:line (llm.c's cudaCheck, but returned as a value, never an abort).
// Tested by tests/gpu/scale_add_test.cpp.
#pragma once

#include <string>
#include <string_view>

#include "backend/cuda/compat.cuh"
#include "core/result.h"

namespace gufo::gpu {

// "src/backend/cuda/ops/x.cu" rather than the absolute path of whoever built the binary.
inline std::string_view short_source_path(std::string_view path) {
  const size_t pos = path.rfind("src/");
  return pos == std::string_view::npos ? path : path.substr(pos);
}

// context: what was being done, e.g. "scale_add_f32(n=1000)".
inline Error make_error(error_t code, std::string_view context, std::string_view call, const char* file, int line) {
  std::string message(context);
  message += ": ";
  message += call;
  message += " failed: ";
  message += error_string(code);
  message += " (";
  message += short_source_path(file);
  message += ":" + std::to_string(line) + ")";
  const ErrorKind kind = is_out_of_memory(code) ? ErrorKind::OutOfMemory
                         : is_device_lost(code) ? ErrorKind::DeviceLost
                                                : ErrorKind::Invalid;
  return Error{std::move(message), kind};
}

}  // namespace gufo::gpu

// Evaluates a call returning gpu::error_t; on failure returns the Error from the enclosing
// function (which returns Status or Result<T>).
#define GUFO_GPU_RETURN_IF_ERROR(call, context)                                             \
  do {                                                                                      \
    const ::gufo::gpu::error_t gufo_gpu_code_ = (call);                                     \
    if (gufo_gpu_code_ != ::gufo::gpu::success) {                                           \
      return ::gufo::gpu::make_error(gufo_gpu_code_, (context), #call, __FILE__, __LINE__); \
    }                                                                                       \
  } while (0)
