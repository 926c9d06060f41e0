// Internal to src/quant: the rounding trick and the per-sub-block scale searches that ggml's
// reference K-quantizers use (nearest_int, make_qkx2_quants, make_qx_quants), reproduced
// operation for operation so quantized bytes match llama.cpp's. Tested through the
// quantizers in tests/unit/quant (ggml digests and known answers).
#pragma once

#include <cstdint>
#include <cstring>

namespace gufo::quant::detail {

// Round to nearest, ties to even, for |value| < 2^22, without a float->int conversion.
// NOTE(k_quant): 12582912 = 1.5 * 2^23. Adding it moves value into [2^23, 2^24), where the
// fp32 spacing is exactly 1, so the add itself rounds; the low 23 bits then hold value + 2^22.
// Out-of-range or non-finite inputs give garbage (NaN -> 0, +inf -> -2^22) but never UB,
// which is what ggml's quantizers see for such inputs too.
inline int nearest_int(float value) {
  const float shifted = value + 12582912.f;
  uint32_t bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  return static_cast<int>(bits & 0x007fffffu) - 0x00400000;
}

// Asymmetric fit of one sub-block (make_qkx2_quants with squared error):
//   x[i] ~= scale * q[i] - min_out,  q[i] in [0, q_max],  min_out >= 0,
// minimizing sum weights[i] * err^2 over n_steps + 1 trial inverse scales
// (rmin + rdelta * step + q_max) / (max - min), each refit by weighted least squares.
// Writes the best q to `q` and returns scale; 0 with q = 0 when the sub-block is constant.
float search_scale_min(int n, int q_max, const float* x, const float* weights, uint8_t* q, float* min_out, float rmin,
                       float rdelta, int n_steps);

// Symmetric fit of one sub-block (make_qx_quants with rmse_type 1, no imatrix):
//   x[i] ~= scale * (q[i] - q_half),  q[i] in [0, 2 * q_half - 1],
// weighting each element by x[i]^2, over 19 trial inverse scales -(q_half + 0.1 * k) / max,
// k = -9..9 (max is the element of largest magnitude, with its sign). The scale may be
// negative. Returns 0 with q = 0 when every |x| < 1e-15.
float search_symmetric_scale(int n, int q_half, const float* x, int8_t* q);

}  // namespace gufo::quant::detail
