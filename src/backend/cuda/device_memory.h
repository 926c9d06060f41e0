// Owned device and pinned host allocations that free themselves, created through Result so
// that running out of memory is an error value (ErrorKind::OutOfMemory) naming what was being
// allocated and how much. Tested through tests/gpu and tests/ops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "backend/cuda/check.cuh"
#include "backend/cuda/compat.cuh"

namespace gufo::cuda {

inline std::string mib_text(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// How one kind of memory is taken and given back.
struct DeviceKind {
  static gpu::error_t take(void** ptr, size_t bytes) { return gpu::malloc_device(ptr, bytes); }
  static void give_back(void* ptr) { gpu::free_device(ptr); }
  static std::string describe() {
    size_t free_bytes = 0, total_bytes = 0;
    gpu::mem_get_info(&free_bytes, &total_bytes);
    return "of device memory (" + mib_text(free_bytes) + " free of " + mib_text(total_bytes) + ")";
  }
};
struct PinnedKind {
  static gpu::error_t take(void** ptr, size_t bytes) { return gpu::malloc_host(ptr, bytes); }
  static void give_back(void* ptr) { gpu::free_host(ptr); }
  static std::string describe() { return "of pinned host memory"; }
};

template <class Kind>
class OwnedMemory {
 public:
  OwnedMemory() = default;
  // `what` names the allocation in the error, e.g. "KV cache".
  static Result<OwnedMemory> allocate(size_t bytes, const std::string& what) {
    OwnedMemory memory;
    if (bytes == 0) return memory;
    void* ptr = nullptr;
    const gpu::error_t code = Kind::take(&ptr, bytes);
    if (code != gpu::success) {
      gpu::clear_last_error();  // clear a non-sticky allocation error
      return Error{
          what + ": cannot allocate " + mib_text(bytes) + " " + Kind::describe() + ": " + gpu::error_string(code),
          gpu::is_device_lost(code) ? ErrorKind::DeviceLost : ErrorKind::OutOfMemory};
    }
    memory.ptr_ = ptr;
    memory.bytes_ = bytes;
    return memory;
  }
  ~OwnedMemory() { reset(); }
  OwnedMemory(OwnedMemory&& other) noexcept : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(other.bytes_) {}
  OwnedMemory& operator=(OwnedMemory&& other) noexcept {
    if (this != &other) {
      reset();
      ptr_ = std::exchange(other.ptr_, nullptr);
      bytes_ = other.bytes_;
    }
    return *this;
  }
  OwnedMemory(const OwnedMemory&) = delete;
  OwnedMemory& operator=(const OwnedMemory&) = delete;

  void reset() {
    if (ptr_ != nullptr) Kind::give_back(ptr_);
    ptr_ = nullptr;
    bytes_ = 0;
  }
  template <class T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceMemory = OwnedMemory<DeviceKind>;
// Page-locked host memory: the only kind a copy can overlap with device work.
using PinnedMemory = OwnedMemory<PinnedKind>;

}  // namespace gufo::cuda
