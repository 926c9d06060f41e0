// Scalar row dot products and activation quantizers: the portable fallback of dot_kernels.h,
// written as plain loops (the block layouts are those of quant/blocks.h, ggml-common.h) and
// the readable statement of what every SIMD kernel computes.
// Tested by tests/unit/backend/cpu_matmul_test.cpp against the reference mat_mul.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/quant/dot_kernels.h"
#include "quant/half.h"

namespace gufo::cpu::fast {
namespace {

using quant::BlockQ4K;
using quant::BlockQ5K;
using quant::BlockQ6K;
using quant::BlockQ8_0;
using quant::BlockQ8K;
using quant::kQ8_0BlockElems;
using quant::kQkK;

uint16_t load_u16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Rounds to the nearest integer in [-127, 127]; NaN maps to 0 rather than to undefined
// behaviour (a NaN activation already makes the scale NaN, so the dot is NaN either way).
int8_t to_q8(float v) {
  if (!(v == v)) return 0;
  const float clamped = std::min(127.0f, std::max(-127.0f, v));
  return static_cast<int8_t>(std::lround(clamped));
}

float dot_f32(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* x = static_cast<const float*>(x_row);
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) {
    float w;
    std::memcpy(&w, w_row + j * 4, sizeof w);
    sum += x[j] * w;
  }
  return sum;
}

float dot_f16(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* x = static_cast<const float*>(x_row);
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) sum += x[j] * quant::fp16_to_fp32(load_u16(w_row + j * 2));
  return sum;
}

float dot_bf16(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* x = static_cast<const float*>(x_row);
  float sum = 0.0f;
  for (int64_t j = 0; j < k; ++j) sum += x[j] * quant::bf16_to_fp32(load_u16(w_row + j * 2));
  return sum;
}

// sum_blocks (d_w * d_x) * sum_i qw[i] * qx[i], accumulated as dot_kernels.h prescribes.
float dot_q8_0(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* w = reinterpret_cast<const BlockQ8_0*>(w_row);
  const auto* x = static_cast<const ActBlockQ8_0*>(x_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    int32_t sumi = 0;
    for (int i = 0; i < kQ8_0BlockElems; ++i) sumi += w[b].qs[i] * x[b].qs[i];
    sum = std::fma(quant::fp16_to_fp32(w[b].d) * x[b].d, static_cast<float>(sumi), sum);
  }
  return sum;
}

// Q4_K/Q5_K: y = d*sc_j*q - dmin*m_j, so a super-block contributes
// d_x*(d*sum_j sc_j*sum_i q*qx - dmin*sum_j m_j*sum_i qx), the last sum read from the Q8_K bsums.
template <bool kFifthBit, typename Block>
float dot_qk_4_5(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* w = reinterpret_cast<const Block*>(w_row);
  const auto* x = static_cast<const BlockQ8K*>(x_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQkK; ++b) {
    int32_t sumi = 0;
    int32_t summ = 0;
    for (int sub = 0; sub < 8; ++sub) {
      const quant::ScaleMin sm = quant::unpack_scale_min_k4(sub, w[b].scales);
      const uint8_t* qs = w[b].qs + (sub / 2) * 32;
      const int shift = (sub % 2) * 4;
      int32_t s = 0;
      for (int i = 0; i < 32; ++i) {
        int q = (qs[i] >> shift) & 0x0f;
        if constexpr (kFifthBit) q |= ((w[b].qh[i] >> sub) & 1) << 4;
        s += q * x[b].qs[sub * 32 + i];
      }
      sumi += sm.scale * s;
      summ += sm.min * (x[b].bsums[2 * sub] + x[b].bsums[2 * sub + 1]);
    }
    sum = std::fma(x[b].d * quant::fp16_to_fp32(w[b].d), static_cast<float>(sumi), sum);
    sum = std::fma(-(x[b].d * quant::fp16_to_fp32(w[b].dmin)), static_cast<float>(summ), sum);
  }
  return sum;
}

// Q6_K: y = d*sc[e/16]*(q - 32); the element order is that of dequantize_row_q6_k.
float dot_q6_k(int64_t k, const std::byte* w_row, const void* x_row) {
  const auto* w = reinterpret_cast<const BlockQ6K*>(w_row);
  const auto* x = static_cast<const BlockQ8K*>(x_row);
  float sum = 0.0f;
  for (int64_t b = 0; b < k / kQkK; ++b) {
    int32_t sumi = 0;
    for (int group = 0; group < kQkK / 16; ++group) {
      int32_t s = 0;
      for (int elem = group * 16; elem < group * 16 + 16; ++elem) {
        const int half = elem / 128;
        const int quarter = (elem % 128) / 32;
        const int lane = elem % 32;
        const uint8_t low_byte = w[b].ql[half * 64 + (quarter % 2) * 32 + lane];
        const int low = quarter < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
        const int high = (w[b].qh[half * 32 + lane] >> (2 * quarter)) & 3;
        s += ((low | (high << 4)) - 32) * x[b].qs[elem];
      }
      sumi += w[b].scales[group] * s;
    }
    sum = std::fma(x[b].d * quant::fp16_to_fp32(w[b].d), static_cast<float>(sumi), sum);
  }
  return sum;
}

}  // namespace

void quantize_activation_q8_0(const float* x, ActBlockQ8_0* out, int64_t k) {
  for (int64_t b = 0; b < k / kQ8_0BlockElems; ++b) {
    const float* xb = x + b * kQ8_0BlockElems;
    float amax = 0.0f;
    for (int i = 0; i < kQ8_0BlockElems; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 127.0f / amax : 0.0f;
    out[b].d = d;
    for (int i = 0; i < kQ8_0BlockElems; ++i) out[b].qs[i] = to_q8(xb[i] * inv_d);
  }
}

void quantize_activation_q8_k(const float* x, quant::BlockQ8K* out, int64_t k) {
  for (int64_t b = 0; b < k / kQkK; ++b) {
    const float* xb = x + b * kQkK;
    float amax = 0.0f;
    for (int i = 0; i < kQkK; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 127.0f / amax : 0.0f;
    out[b].d = d;
    for (int i = 0; i < kQkK; ++i) out[b].qs[i] = to_q8(xb[i] * inv_d);
    for (int group = 0; group < kQkK / 16; ++group) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += out[b].qs[group * 16 + i];
      out[b].bsums[group] = static_cast<int16_t>(sum);
    }
  }
}

ActivationFormat activation_format(DType weight_type) {
  switch (weight_type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
      return ActivationFormat::F32;
    case DType::Q8_0:
      return ActivationFormat::Q8_0;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return ActivationFormat::Q8K;
    default:
      return ActivationFormat::Unsupported;
  }
}

DotFn dot_for(const DotKernels& kernels, DType weight_type) {
  switch (weight_type) {
    case DType::F32:
      return kernels.f32;
    case DType::F16:
      return kernels.f16;
    case DType::BF16:
      return kernels.bf16;
    case DType::Q8_0:
      return kernels.q8_0;
    case DType::Q4_K:
      return kernels.q4_k;
    case DType::Q5_K:
      return kernels.q5_k;
    case DType::Q6_K:
      return kernels.q6_k;
    default:
      return nullptr;
  }
}

DotRowsFn dot_rows_for(const DotKernels& kernels, DType weight_type) {
  switch (weight_type) {
    case DType::Q8_0:
      return kernels.q8_0_rows;
    case DType::Q4_K:
      return kernels.q4_k_rows;
    case DType::Q5_K:
      return kernels.q5_k_rows;
    case DType::Q6_K:
      return kernels.q6_k_rows;
    default:
      return nullptr;
  }
}

DotTileFn dot_tile_for(const DotKernels& kernels, DType weight_type) {
  return weight_type == DType::Q8_0 ? kernels.q8_0_tile : nullptr;
}

DotWeightsFn dot_weights_for(const DotKernels& kernels, DType weight_type) {
  switch (weight_type) {
    case DType::Q8_0:
      return kernels.q8_0_weights;
    case DType::Q4_K:
      return kernels.q4_k_weights;
    case DType::Q5_K:
      return kernels.q5_k_weights;
    case DType::Q6_K:
      return kernels.q6_k_weights;
    default:
      return nullptr;
  }
}

PackedPath packed_path_for(const DotKernels& kernels, DType weight_type, int64_t k) {
  const PackedKernels& p = kernels.packed;
  const auto k_quant = [&](PackFn pack, PackedGemmFn gemm) {
    return pack == nullptr || gemm == nullptr
               ? PackedPath{}
               : PackedPath{pack, gemm, static_cast<size_t>(k / quant::kQkK) * kPackedKBlockBytes, p.min_rows_k};
  };
  switch (weight_type) {
    case DType::Q8_0:
      if (p.pack_q8_0 == nullptr || p.gemm_q8_0 == nullptr) return {};
      return PackedPath{p.pack_q8_0, p.gemm_q8_0,
                        static_cast<size_t>(k / quant::kQ8_0BlockElems) * kPackedQ8_0BlockBytes, p.min_rows_q8_0};
    case DType::Q4_K:
      return k_quant(p.pack_q4_k, p.gemm_k);
    case DType::Q5_K:
      return k_quant(p.pack_q5_k, p.gemm_k);
    case DType::Q6_K:
      return k_quant(p.pack_q6_k, p.gemm_q6_k);
    default:
      return {};
  }
}

const DotKernels& scalar_dot_kernels() {
  static const DotKernels kernels{"scalar",
                                  dot_f32,
                                  dot_f16,
                                  dot_bf16,
                                  dot_q8_0,
                                  dot_qk_4_5<false, BlockQ4K>,
                                  dot_qk_4_5<true, BlockQ5K>,
                                  dot_q6_k,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  nullptr,
                                  quantize_activation_q8_0,
                                  quantize_activation_q8_k,
                                  PackedKernels{}};
  return kernels;
}

}  // namespace gufo::cpu::fast
