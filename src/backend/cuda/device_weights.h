// The model's weights in device memory, each in the layout its kernels read (weight_view.h),
// made once when the model is prepared. Q8_0 and Q6_K blocks are split for alignment through
// a bounded pinned staging buffer; the other types are copied from the mmap'd file as they
// are, so the file is never copied whole in host memory. Vectors that row-wise ops read (norm
// weights, biases, rope factors) are kept as f32. Tested by tests/ops and tests/gpu.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "backend/cuda/compat.cuh"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/weight_view.h"
#include "model/weights.h"

namespace gufo::cuda {

class DeviceWeights {
 public:
  // The matrix (or expert stack) `w` in its kernel layout; an error names the tensor when its
  // type has no CUDA kernels or memory runs out.
  Status upload_matrix(const model::Weight& w, gpu::stream_t stream);
  // `w` (any dequantizable type) as f32 [rows * cols].
  Status upload_vector(const model::Weight& w, gpu::stream_t stream);

  // Device bytes upload_matrix / upload_vector will take for `w` (0 for a type without kernels).
  static uint64_t matrix_bytes(const model::Weight& w);
  static uint64_t vector_bytes(const model::Weight& w);

  const WeightView* matrix(const model::Weight* w) const;
  const float* vector(const model::Weight* w) const;

 private:
  struct Matrix {
    WeightView view;
    DeviceMemory memory;
  };
  Status stage_repacked(const model::Weight& w, Matrix& m, gpu::stream_t stream);

  std::unordered_map<const model::Weight*, Matrix> matrices_;
  std::unordered_map<const model::Weight*, DeviceMemory> vectors_;
  PinnedMemory staging_;
};

// Whether the CUDA backend has kernels for weights of this type.
bool device_supports_type(DType type);

}  // namespace gufo::cuda
