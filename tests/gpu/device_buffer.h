// A device allocation that frees itself, for the GPU tests only (the engine will have its own
// allocator). Part of tests/gpu (ctest --preset gpu).
#pragma once

#include <cstddef>
#include <string>

#include "backend/cuda/compat.cuh"

namespace gufo::gpu_test {

// True when a CUDA device is usable; otherwise `why` says what the runtime answered.
inline bool have_device(std::string* why) {
  int count = 0;
  const gpu::error_t code = gpu::get_device_count(&count);
  if (code != gpu::success || count == 0) {
    gpu::get_last_error();
    *why = code != gpu::success ? gpu::error_string(code) : "0 devices";
    return false;
  }
  return true;
}

template <class T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t count) : count_(count) {
    void* ptr = nullptr;
    if (gpu::malloc_device(&ptr, count * sizeof(T)) == gpu::success) data_ = static_cast<T*>(ptr);
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) gpu::free_device(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }  // nullptr when the allocation failed
  size_t size() const { return count_; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace gufo::gpu_test
