// scale_add kernel and launcher: y[i] = fma(a, x[i], b) over n f32 elements (see scale_add.cuh).
// CPU reference: backend/cpu/ops/scale_add.cpp. Tested by tests/gpu/scale_add_test.cpp.
#include "backend/cuda/ops/scale_add.cuh"

#include <cstdint>
#include <limits>
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/compat.cuh"

namespace gufo::cuda {
namespace {

// NOTE(scale_add): 8 warps per block is a common occupancy sweet spot for a streaming op; the
// block size follows the warp width rather than hard-coding 256.
constexpr int threads_per_block = 8 * gpu::warp_size;
// NOTE(scale_add): 65536 blocks x 256 threads covers 16M elements per sweep, far more than any
// GPU runs at once; the grid-stride loop covers larger n.
constexpr int64_t max_blocks = 65536;

// y[i] = fma(a, x[i], b): one rounding, exactly like the CPU reference's std::fma.
// No __restrict__: y may be x (in place).
__global__ void scale_add_f32_kernel(const float* x, float* y, int64_t n, float a, float b) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t idx = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; idx < n; idx += stride) {
    y[idx] = fmaf(a, x[idx], b);
  }
}

// Checks that `ptr` is device (or managed) memory of the current device.
Status check_device_pointer(const void* ptr, const char* name, int device, const std::string& context) {
  gpu::pointer_attributes_t attr{};
  GUFO_GPU_RETURN_IF_ERROR(gpu::pointer_get_attributes(&attr, ptr), context);
  if (!gpu::is_device_memory(attr)) {
    return Error{context + ": " + name + " is not device memory (a host pointer?)"};
  }
  if (attr.device != device) {
    return Error{context + ": " + name + " lives on device " + std::to_string(attr.device) +
                 ", the current device is " + std::to_string(device)};
  }
  return ok_status();
}

}  // namespace

Status scale_add_f32(const float* x, float* y, int64_t n, float a, float b, gpu::stream_t stream) {
  const std::string context = "scale_add_f32(n=" + std::to_string(n) + ")";
  if (n < 0) return Error{context + ": n must be >= 0"};
  if (n == 0) return ok_status();
  if (x == nullptr || y == nullptr) {
    return Error{context + ": " + (x == nullptr ? "x" : "y") + " is null"};
  }
  if (n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(sizeof(float))) {
    return Error{context + ": n * sizeof(float) overflows"};
  }
  // In place is fine (each element is read before it is written by the same thread); a partial
  // overlap would make the result depend on thread order.
  const auto x_begin = reinterpret_cast<uintptr_t>(x);
  const auto y_begin = reinterpret_cast<uintptr_t>(y);
  const auto bytes = static_cast<uintptr_t>(n) * sizeof(float);
  if (x_begin != y_begin && x_begin < y_begin + bytes && y_begin < x_begin + bytes) {
    return Error{context + ": x and y partly overlap"};
  }
  int device = 0;
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_device(&device), context);
  GUFO_RETURN_IF_ERROR(check_device_pointer(x, "x", device, context));
  GUFO_RETURN_IF_ERROR(check_device_pointer(y, "y", device, context));

  int64_t blocks = (n + threads_per_block - 1) / threads_per_block;
  if (blocks > max_blocks) blocks = max_blocks;
  (void)gpu::launch(scale_add_f32_kernel, static_cast<unsigned>(blocks), threads_per_block, 0, stream, x, y, n, a, b);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  return ok_status();
}

}  // namespace gufo::cuda
