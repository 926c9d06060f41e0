// rope, scalar reference (see ops.h). Angles in double, then f32 cos/sin as Hugging Face
// rounds them; "normal" pairs (2i, 2i+1), "neox" pairs (i, i + head_dim/2).
#include <cmath>
#include <vector>

#include "backend/cpu/ops/ops.h"

namespace gufo::cpu {

void rope(float* x, int64_t rows, int64_t cols, std::span<const int32_t> positions, int64_t head_dim,
          model::RopeType type, float theta, const float* freq_factors) {
  const int64_t half = head_dim / 2;
  // NOTE(rope): inv_freq as HF computes it (f32 of theta^(-2i/d)), then the llama3 factor;
  // computed once per call rather than once per row (pow was ~1% of prefill).
  std::vector<float> inv_freqs(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    inv_freqs[static_cast<size_t>(i)] =
        static_cast<float>(1.0 / std::pow(static_cast<double>(theta), static_cast<double>(2 * i) / head_dim));
  }
  for (int64_t row = 0; row < rows; ++row) {
    const double position = positions[static_cast<size_t>(row)];
    for (int64_t i = 0; i < half; ++i) {
      const float inv_freq = inv_freqs[static_cast<size_t>(i)];
      double angle = position * static_cast<double>(inv_freq);
      if (freq_factors != nullptr) angle /= static_cast<double>(freq_factors[i]);
      const float c = static_cast<float>(std::cos(angle));
      const float s = static_cast<float>(std::sin(angle));
      for (int64_t head = 0; head < cols / head_dim; ++head) {
        float* h = x + row * cols + head * head_dim;
        const int64_t a = type == model::RopeType::Normal ? 2 * i : i;
        const int64_t b = type == model::RopeType::Normal ? 2 * i + 1 : i + half;
        const float x0 = h[a];
        const float x1 = h[b];
        h[a] = x0 * c - x1 * s;
        h[b] = x0 * s + x1 * c;
      }
    }
  }
}

}  // namespace gufo::cpu
