// Test helpers for device code (tests/gpu, tests/ops): whether a CUDA device is usable, and a
// device allocation that frees itself, filled from and read back into host vectors.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

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

// Skips the calling test when no CUDA device is usable.
#define GUFO_REQUIRE_GPU()                                                                           \
  do {                                                                                               \
    std::string gufo_why_;                                                                           \
    if (!::gufo::gpu_test::have_device(&gufo_why_)) GTEST_SKIP() << "no CUDA device: " << gufo_why_; \
  } while (0)

template <class T>
class DeviceBuffer {
 public:
  // NOTE(device_buffer): a new buffer holds all-ones bytes (NaN for floats), so that an element
  // a kernel never wrote cannot pass as a computed value.
  explicit DeviceBuffer(size_t count) : count_(count) {
    void* ptr = nullptr;
    const size_t bytes = std::max<size_t>(count, 1) * sizeof(T);
    if (gpu::malloc_device(&ptr, bytes) != gpu::success) return;
    data_ = static_cast<T*>(ptr);
    EXPECT_EQ(gpu::memset_async(data_, 0xff, bytes, nullptr), gpu::success);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    if (data_ != nullptr && !host.empty()) {
      EXPECT_EQ(gpu::copy_to_device(data_, host.data(), host.size() * sizeof(T)), gpu::success);
    }
  }
  ~DeviceBuffer() {
    if (data_ != nullptr) gpu::free_device(data_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* get() const { return data_; }  // nullptr when the allocation failed
  size_t size() const { return count_; }
  // Waits for the device, then copies the whole buffer back.
  std::vector<T> download() const {
    std::vector<T> host(count_);
    EXPECT_EQ(gpu::device_synchronize(), gpu::success);
    if (data_ != nullptr && count_ > 0) {
      EXPECT_EQ(gpu::copy_to_host(host.data(), data_, count_ * sizeof(T)), gpu::success);
    }
    return host;
  }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace gufo::gpu_test
