// How a weight lies in device memory: the layout its kernels read, made once at load by
// device_weights.cpp. A 3-D expert stack is a matrix of n_expert * rows_per_expert rows
// (expert e's rows come e-th), so a kernel reaches expert e by a row offset.
//   F32, F16, BF16: q = [rows][cols] elements.
//   Q8_0: q = [rows][cols] int8 quants, d = [rows][cols / 32] fp16 scales (ggml's 34-byte
//         blocks split so that quants are 16-byte aligned).
//   Q4_K, Q5_K: q = the GGUF blocks as they are (144 and 176 bytes: already 16-byte aligned).
//   Q6_K: q = [rows][cols / 256][192] (ql then qh), scales = [rows][cols / 16] int8,
//         d = [rows][cols / 256] fp16 (ggml's 210-byte blocks split for alignment).
// Plain data, shared by host and device code. Tested by tests/ops (every kernel reads it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"

namespace gufo::cuda {

struct WeightView {
  DType type = DType::F32;
  int64_t rows = 0;  // all experts' rows
  int64_t cols = 0;
  int64_t rows_per_expert = 0;
  const std::byte* q = nullptr;
  size_t q_row_bytes = 0;
  const uint16_t* d = nullptr;  // Q8_0, Q6_K: fp16 scales, d_per_row per row
  int64_t d_per_row = 0;
  const int8_t* scales = nullptr;  // Q6_K: the 16 sub-block scales of each super-block
};

// Bytes of q for one row of `cols` elements of `type` in its device layout, or 0 when the
// CUDA backend has no kernels for the type.
inline size_t device_row_bytes(DType type, int64_t cols) {
  switch (type) {
    case DType::F32:
      return static_cast<size_t>(cols) * 4;
    case DType::F16:
    case DType::BF16:
      return static_cast<size_t>(cols) * 2;
    case DType::Q8_0:
      return static_cast<size_t>(cols);
    case DType::Q4_K:
      return static_cast<size_t>(cols / 256) * 144;
    case DType::Q5_K:
      return static_cast<size_t>(cols / 256) * 176;
    case DType::Q6_K:
      return static_cast<size_t>(cols / 256) * 192;
    default:
      return 0;
  }
}

}  // namespace gufo::cuda
