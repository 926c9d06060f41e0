// The per-sub-block scale searches behind the reference K-quantizers (see k_quant_search.h).
// Every float expression keeps ggml's operand order and fp32 accumulation: a reordered sum
// or a fused multiply-add changes which trial wins and therefore the bytes. Tested through
// tests/unit/quant/ggml_golden_test.cpp.
#include "quant/k_quant_search.h"

#include <cmath>

#include "core/check.h"

namespace gufo::quant::detail {
namespace {

// NOTE(k_quant): K-quant sub-blocks hold 16 or 32 elements; 32 bounds the scratch space.
constexpr int kMaxSubBlockElems = 32;

int clamp_int(int value, int lo, int hi) { return value < lo ? lo : (value > hi ? hi : value); }

}  // namespace

float search_scale_min(int n, int q_max, const float* x, const float* weights, uint8_t* q, float* min_out, float rmin,
                       float rdelta, int n_steps) {
  GUFO_CHECK(n >= 1 && n <= kMaxSubBlockElems);
  // Range and weighted sums, accumulated left to right like ggml.
  float min = x[0];
  float max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  // The offset only ever lowers the grid: a sub-block of positives still starts at 0.
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) q[i] = 0;
    *min_out = -min;
    return 0.f;
  }

  // Start from the plain min/max grid and score it.
  float iscale = q_max / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    q[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, q_max));
    const float diff = scale * q[i] + min - x[i];
    best_error += weights[i] * (diff * diff);
  }

  // Try stretched/shrunk grids; refit scale and offset by weighted least squares for each.
  // NOTE(k_quant): `min` is updated when a trial wins and later trials are built from the
  // updated value, exactly as in ggml; keeping the first min would change the bytes.
  uint8_t trial[kMaxSubBlockElems];
  for (int step = 0; step <= n_steps; ++step) {
    iscale = (rmin + rdelta * step + q_max) / (max - min);
    float sum_l = 0;
    float sum_l2 = 0;
    float sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, q_max);
      trial[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0) {  // a positive offset is not representable: refit through zero
      this_min = 0;
      this_scale = sum_xl / sum_l2;
    }
    float error = 0;
    for (int i = 0; i < n; ++i) {
      const float diff = this_scale * trial[i] + this_min - x[i];
      error += weights[i] * (diff * diff);
    }
    if (error < best_error) {
      for (int i = 0; i < n; ++i) q[i] = trial[i];
      best_error = error;
      scale = this_scale;
      min = this_min;
    }
  }
  *min_out = -min;
  return scale;
}

float search_symmetric_scale(int n, int q_half, const float* x, int8_t* q) {
  float max = 0;  // the value of largest magnitude, keeping its sign
  float amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  // NOTE(k_quant): 1e-15 is ggml's GROUP_MAX_EPS: below it a group counts as all zero.
  if (amax < 1e-15f) {
    for (int i = 0; i < n; ++i) q[i] = 0;
    return 0.f;
  }

  // Signed levels l in [-q_half, q_half - 1]; the largest-magnitude element maps to -q_half.
  auto level = [q_half](float iscale, float value) {
    return clamp_int(nearest_int(iscale * value), -q_half, q_half - 1);
  };

  float iscale = -q_half / max;
  float sum_lx = 0;
  float sum_l2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = level(iscale, x[i]);
    q[i] = static_cast<int8_t>(l + q_half);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * l;
    sum_l2 += w * l * l;
  }
  float scale = sum_l2 != 0 ? sum_lx / sum_l2 : 0.0f;
  float best = scale * sum_lx;

  // NOTE(k_quant): the 18 trials -(q_half + 0.1 k) / max, k = -9..9 without 0, are ggml's.
  for (int k = -9; k <= 9; ++k) {
    if (k == 0) continue;
    iscale = -(q_half + 0.1f * k) / max;
    sum_lx = 0;
    sum_l2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = level(iscale, x[i]);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
    // Maximizing sum_lx^2 / sum_l2 minimizes the weighted error of the least-squares scale.
    if (sum_l2 > 0 && sum_lx * sum_lx > best * sum_l2) {
      for (int i = 0; i < n; ++i) q[i] = static_cast<int8_t>(level(iscale, x[i]) + q_half);
      scale = sum_lx / sum_l2;
      best = scale * sum_lx;
    }
  }
  return scale;
}

}  // namespace gufo::quant::detail
