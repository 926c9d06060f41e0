// rms_norm, scalar reference (see ops.h). HF computes the mean of squares in f32, as here.
#include <cmath>

#include "backend/cpu/ops/ops.h"

namespace gufo::cpu {

void rms_norm(const float* x, int64_t rows, int64_t cols, const float* w, int64_t group, float eps, float* out) {
  for (int64_t row = 0; row < rows; ++row) {
    for (int64_t start = 0; start < cols; start += group) {
      const float* in = x + row * cols + start;
      float* dst = out + row * cols + start;
      float sum_sq = 0.0f;
      for (int64_t j = 0; j < group; ++j) sum_sq += in[j] * in[j];
      const float inv_rms = 1.0f / std::sqrt(sum_sq / static_cast<float>(group) + eps);
      for (int64_t j = 0; j < group; ++j) dst[j] = in[j] * inv_rms * w[j];
    }
  }
}

}  // namespace gufo::cpu
