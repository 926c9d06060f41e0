// Device-side reading of every weight layout of weight_view.h: element dequantization for
// get_rows (the same float operations as quant/reference_dequantize.cpp, so the same bits),
// and for the quantized matmul (ops/mat_mul_q.cu) the pieces of the CPU's accumulation order
// (backend/cpu/quant/dot_kernels.h, "Accumulation order"):
//   - quad(): 4 consecutive int8 weights of a 32-element chunk of a super-block (the unit of
//     the float chain: 32 elements for Q8_0, 256 for the K-quants), for the integer dots;
//   - scale() and the mins: the integer factors of each chunk (or 16-element half);
//   - step() and apply(): the float step per super-block, in the CPU's operand order, from the
//     block's d and dmin (every RowBlock has both; dmin is 0 where a type has no mins);
//     chain_block() below does both.
// Tested by tests/ops (get_rows and mat_mul against the CPU, bit for bit).
#pragma once

#include <cstdint>

#include "backend/cuda/weight_view.h"
#include "quant/blocks.h"
#include "quant/half.h"

namespace gufo::cuda {

__device__ inline uint32_t load_u32(const std::byte* p) { return *reinterpret_cast<const uint32_t*>(p); }

// c + the dot product of the four int8 lanes of a and b (dp4a; a loop where there is none).
__device__ inline int dot4(uint32_t a, uint32_t b, int c) {
#if defined(GUFO_HIP)
  for (int i = 0; i < 4; ++i) c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
#else
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#endif
}

__device__ inline const std::byte* weight_row(const WeightView& w, int64_t row) {
  return w.q + static_cast<size_t>(row) * w.q_row_bytes;
}

// Each byte b of `q` (0..63) becomes b - 32 as int8, without borrows between bytes.
__device__ inline uint32_t bytes_minus_32(uint32_t q) { return ((q | 0x80808080u) - 0x20202020u) ^ 0x80808080u; }

// One super-block's float step split in two: the operands (step(), which does not read the
// running sum, so the lanes of a warp can make them side by side) and the fused multiply-adds
// into the sum (apply(), in super-block order); chain_block() does both at once.
struct ChainStep {
  float scale;      // d_x * d, or d * d_x: each type in the CPU's operand order
  float sum;        // float(S)
  float min_scale;  // -(d_x * dmin), 0 without mins
  float min_sum;    // float(M)
};

struct TraitsQ8_0 {
  static constexpr int kSuperBlock = 32;
  static constexpr int kChunks = 1;
  static constexpr bool kActQ8K = false;  // activations as 32-blocks with an f32 scale
  static constexpr bool kMins = false;
  static constexpr bool kSplitHalves = false;
  struct RowBlock {
    float d;
    float dmin;
  };
  static constexpr int kBlockBytes = 32;  // quants of a super-block in q (the scale is in d)
  __device__ static RowBlock row_block(const WeightView& w, int64_t row, int64_t sb) {
    return {quant::fp16_to_fp32(w.d[row * w.d_per_row + sb]), 0.0f};
  }
  __device__ static RowBlock row_block_at(const std::byte* /*block*/, const WeightView& w, int64_t row, int64_t sb) {
    return row_block(w, row, sb);
  }
  __device__ static uint32_t quad_at(const std::byte* block, int /*chunk*/, int kk) { return load_u32(block + kk); }
  __device__ static uint32_t quad(const WeightView& w, int64_t row, int64_t sb, int chunk, int kk) {
    return quad_at(weight_row(w, row) + sb * kBlockBytes, chunk, kk);
  }
  __device__ static int scale(const RowBlock&, int, int) { return 1; }
  __device__ static int min(const RowBlock&, int) { return 0; }
  // CPU: acc = fma(d_w * d_x, float(S), acc)
  __device__ static ChainStep step(float d, float /*dmin*/, float dx, int s, int) {
    return {d * dx, static_cast<float>(s), 0.0f, 0.0f};
  }
  __device__ static float apply(float acc, const ChainStep& st) { return fmaf(st.scale, st.sum, acc); }
  __device__ static float dequantize(const WeightView& w, int64_t row, int64_t col) {
    const float d = quant::fp16_to_fp32(w.d[row * w.d_per_row + col / 32]);
    return static_cast<float>(reinterpret_cast<const int8_t*>(weight_row(w, row))[col]) * d;
  }
};

// Q4_K and Q5_K: chunk c of a super-block is sub-block c, held in the low (c even) or high
// (c odd) nibbles of qs bytes (c / 2) * 32 ..; Q5_K's fifth bit is bit c of qh[i].
template <class Block, bool kFifthBit>
struct TraitsQ45K {
  static constexpr int kSuperBlock = 256;
  static constexpr int kChunks = 8;
  static constexpr bool kActQ8K = true;
  static constexpr bool kMins = true;
  static constexpr bool kSplitHalves = false;
  // The eight 6-bit scales and mins as bytes of two words each (byte j % 4 of word j / 4):
  // unpacked from the block's 12 packed bytes a word at a time, and kept in 4 registers.
  struct RowBlock {
    float d;
    float dmin;
    uint32_t sc[2];
    uint32_t mn[2];
  };
  __device__ static const Block* block(const WeightView& w, int64_t row, int64_t sb) {
    return reinterpret_cast<const Block*>(weight_row(w, row)) + sb;
  }
  static constexpr int kBlockBytes = sizeof(Block);
  __device__ static RowBlock row_block(const WeightView& w, int64_t row, int64_t sb) {
    return row_block_at(reinterpret_cast<const std::byte*>(block(w, row, sb)), w, row, sb);
  }
  // From the block's bytes wherever they are (global memory, or a tile in shared memory):
  // quant::unpack_scale_min_k4 for all eight sub-blocks at once. Scales j < 4 and mins j < 4
  // are the low 6 bits of bytes 0-3 and 4-7; for j >= 4, the nibbles of bytes 8-11 below the
  // top two bits of bytes j - 4 (scales) and j (mins).
  __device__ static RowBlock row_block_at(const std::byte* bytes, const WeightView& /*w*/, int64_t /*row*/,
                                          int64_t /*sb*/) {
    const Block* b = reinterpret_cast<const Block*>(bytes);
    const auto* packed = reinterpret_cast<const std::byte*>(b->scales);
    const uint32_t s0 = load_u32(packed), s1 = load_u32(packed + 4), s2 = load_u32(packed + 8);
    RowBlock rb;
    rb.d = quant::fp16_to_fp32(b->d);
    rb.dmin = quant::fp16_to_fp32(b->dmin);
    rb.sc[0] = s0 & 0x3f3f3f3fu;
    rb.mn[0] = s1 & 0x3f3f3f3fu;
    rb.sc[1] = (s2 & 0x0f0f0f0fu) | ((s0 >> 2) & 0x30303030u);
    rb.mn[1] = ((s2 >> 4) & 0x0f0f0f0fu) | ((s1 >> 2) & 0x30303030u);
    return rb;
  }
  __device__ static uint32_t quad(const WeightView& w, int64_t row, int64_t sb, int chunk, int kk) {
    return quad_at(reinterpret_cast<const std::byte*>(block(w, row, sb)), chunk, kk);
  }
  __device__ static uint32_t quad_at(const std::byte* bytes, int chunk, int kk) {
    const Block* b = reinterpret_cast<const Block*>(bytes);
    const uint32_t packed = load_u32(reinterpret_cast<const std::byte*>(b->qs) + (chunk / 2) * 32 + kk);
    uint32_t q = (packed >> (4 * (chunk & 1))) & 0x0f0f0f0fu;
    if constexpr (kFifthBit) {
      const uint32_t high = load_u32(reinterpret_cast<const std::byte*>(b->qh) + kk);
      q |= ((high >> chunk) & 0x01010101u) << 4;
    }
    return q;
  }
  __device__ static int scale(const RowBlock& rb, int chunk, int) {
    return static_cast<int>((rb.sc[chunk / 4] >> (8 * (chunk % 4))) & 0xffu);
  }
  __device__ static int min(const RowBlock& rb, int chunk) {
    return static_cast<int>((rb.mn[chunk / 4] >> (8 * (chunk % 4))) & 0xffu);
  }
  // CPU: acc = fma(d_x * d, float(S), acc); acc = fma(-(d_x * dmin), float(M), acc)
  __device__ static ChainStep step(float d, float dmin, float dx, int s, int m) {
    return {dx * d, static_cast<float>(s), -(dx * dmin), static_cast<float>(m)};
  }
  __device__ static float apply(float acc, const ChainStep& st) {
    return fmaf(st.min_scale, st.min_sum, fmaf(st.scale, st.sum, acc));
  }
  __device__ static float dequantize(const WeightView& w, int64_t row, int64_t col) {
    const Block* b = block(w, row, col / 256);
    const int elem = static_cast<int>(col % 256);
    const int sub = elem / 32;
    const quant::ScaleMin sm = quant::unpack_scale_min_k4(sub, b->scales);
    const float sub_scale = quant::fp16_to_fp32(b->d) * sm.scale;
    const float sub_min = quant::fp16_to_fp32(b->dmin) * sm.min;
    const uint8_t byte = b->qs[(elem / 64) * 32 + elem % 32];
    int q = (elem % 64) >= 32 ? (byte >> 4) : (byte & 0x0f);
    if constexpr (kFifthBit) q += 16 * ((b->qh[elem % 32] >> sub) & 1);
    return sub_scale * q - sub_min;
  }
};
using TraitsQ4K = TraitsQ45K<quant::BlockQ4K, false>;
using TraitsQ5K = TraitsQ45K<quant::BlockQ5K, true>;

// Q6_K (device layout, weight_view.h): element e of a super-block: half h = e / 128, quarter
// k = (e % 128) / 32; low 4 bits in ql byte h*64 + (k % 2)*32 + e % 32 (low nibble for k < 2),
// bits 4-5 are bits 2k..2k+1 of qh byte h*32 + e % 32; the scale is per 16 elements, so each
// 32-element chunk has two halves with scales 2c and 2c + 1.
struct TraitsQ6K {
  static constexpr int kSuperBlock = 256;
  static constexpr int kChunks = 8;
  static constexpr bool kActQ8K = true;
  static constexpr bool kMins = false;
  static constexpr bool kSplitHalves = true;
  // The sixteen int8 scales as bytes of four words (byte j % 4 of word j / 4): 4 registers.
  struct RowBlock {
    float d;
    float dmin;
    uint32_t sc[4];
  };
  __device__ static RowBlock row_block(const WeightView& w, int64_t row, int64_t sb) {
    RowBlock rb;
    rb.d = quant::fp16_to_fp32(w.d[row * w.d_per_row + sb]);
    rb.dmin = 0.0f;
    // 16-byte aligned: device_weights.cpp lays the scales out 16 a super-block.
    const uint4 sc = *reinterpret_cast<const uint4*>(w.scales + row * (w.d_per_row * 16) + sb * 16);
    rb.sc[0] = sc.x;
    rb.sc[1] = sc.y;
    rb.sc[2] = sc.z;
    rb.sc[3] = sc.w;
    return rb;
  }
  static constexpr int kBlockBytes = 192;  // ql and qh of a super-block (d and scales apart)
  __device__ static RowBlock row_block_at(const std::byte* /*block*/, const WeightView& w, int64_t row, int64_t sb) {
    return row_block(w, row, sb);
  }
  __device__ static uint32_t quad(const WeightView& w, int64_t row, int64_t sb, int chunk, int kk) {
    return quad_at(weight_row(w, row) + sb * kBlockBytes, chunk, kk);
  }
  __device__ static uint32_t quad_at(const std::byte* base, int chunk, int kk) {
    const int half = chunk / 4;
    const int quarter = chunk % 4;
    const uint32_t low = (load_u32(base + half * 64 + (quarter & 1) * 32 + kk) >> (4 * (quarter >> 1))) & 0x0f0f0f0fu;
    const uint32_t high = (load_u32(base + 128 + half * 32 + kk) >> (2 * quarter)) & 0x03030303u;
    return bytes_minus_32(low | (high << 4));
  }
  __device__ static int scale(const RowBlock& rb, int chunk, int half) {
    const int j = 2 * chunk + half;
    return static_cast<int8_t>(rb.sc[j / 4] >> (8 * (j % 4)));
  }
  __device__ static int min(const RowBlock&, int) { return 0; }
  // CPU: acc = fma(d_x * d, float(S), acc)
  __device__ static ChainStep step(float d, float /*dmin*/, float dx, int s, int) {
    return {dx * d, static_cast<float>(s), 0.0f, 0.0f};
  }
  __device__ static float apply(float acc, const ChainStep& st) { return fmaf(st.scale, st.sum, acc); }
  __device__ static float dequantize(const WeightView& w, int64_t row, int64_t col) {
    const int64_t sb = col / 256;
    const int elem = static_cast<int>(col % 256);
    const std::byte* base = weight_row(w, row) + sb * 192;
    const int half = elem / 128;
    const int quarter = (elem % 128) / 32;
    const int lane = elem % 32;
    const auto low_byte = static_cast<uint8_t>(base[half * 64 + (quarter % 2) * 32 + lane]);
    const int low = quarter < 2 ? (low_byte & 0x0f) : (low_byte >> 4);
    const int high = (static_cast<uint8_t>(base[128 + half * 32 + lane]) >> (2 * quarter)) & 3;
    const int q = (low | (high << 4)) - 32;
    const float d = quant::fp16_to_fp32(w.d[row * w.d_per_row + sb]);
    // NOTE(q6_k): (d * scale) first, then * q, as quant/reference_dequantize.cpp (ggml's order).
    return d * w.scales[row * (w.d_per_row * 16) + col / 16] * q;
  }
};

__device__ inline float dequantize_float(const WeightView& w, int64_t row, int64_t col) {
  const std::byte* r = weight_row(w, row);
  switch (w.type) {
    case DType::F32:
      return reinterpret_cast<const float*>(r)[col];
    case DType::F16:
      return quant::fp16_to_fp32(reinterpret_cast<const uint16_t*>(r)[col]);
    default:
      return quant::bf16_to_fp32(reinterpret_cast<const uint16_t*>(r)[col]);
  }
}

// Element (row, col) of any supported weight as f32, bit-identical to the CPU's dequantizers.
__device__ inline float dequantize_element(const WeightView& w, int64_t row, int64_t col) {
  switch (w.type) {
    case DType::Q8_0:
      return TraitsQ8_0::dequantize(w, row, col);
    case DType::Q4_K:
      return TraitsQ4K::dequantize(w, row, col);
    case DType::Q5_K:
      return TraitsQ5K::dequantize(w, row, col);
    case DType::Q6_K:
      return TraitsQ6K::dequantize(w, row, col);
    default:
      return dequantize_float(w, row, col);
  }
}

// One super-block's float step, operands and multiply-adds together.
template <class T>
__device__ inline float chain_block(float acc, float d, float dmin, float dx, int s, int m) {
  return T::apply(acc, T::step(d, dmin, dx, s, m));
}

}  // namespace gufo::cuda
