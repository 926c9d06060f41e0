// RoPE's rotation angle, for rope_angles (row_ops.cu), whose table both rope and qk_norm_rope
// (fused_runs.cu) read: computed in double as backend/cpu/ops/rope.cpp does, then cos and sin
// rounded to float.
#pragma once

#include <cstdint>

namespace gufo::cuda {

// cos and sin of pair i's angle at `position`; freq_factors [head_dim / 2] or null.
__device__ inline void rope_angle(int64_t i, int32_t position, int64_t head_dim, float theta, const float* freq_factors,
                                  float& c, float& s) {
  const auto inv_freq = static_cast<float>(
      1.0 / pow(static_cast<double>(theta), static_cast<double>(2 * i) / static_cast<double>(head_dim)));
  double angle = static_cast<double>(position) * static_cast<double>(inv_freq);
  if (freq_factors != nullptr) angle /= static_cast<double>(freq_factors[i]);
  c = static_cast<float>(cos(angle));
  s = static_cast<float>(sin(angle));
}

}  // namespace gufo::cuda
