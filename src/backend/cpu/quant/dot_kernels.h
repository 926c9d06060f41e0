// Row dot products for the fast CPU matmul (ops/mat_mul_fast.cpp): one weight row of any GGUF
// type against one activation row, in a scalar version (the portable fallback, and what
// non-x86 builds run), an AVX2+FMA+F16C version and AVX-512 versions (with and without VNNI)
// chosen at run time from the CPU's features.
// Tested by tests/unit/backend/cpu_matmul_test.cpp (fast vs reference mat_mul, scalar vs AVX2).
//
// Design in brief (the GGUF ecosystem's scheme, see ggml-cpu's vec_dot_* and quantize_row_q8_*):
// - F32/F16/BF16 weights are dotted with the f32 activations directly (FMA; F16C/shift widen),
//   so their results differ from the reference only by the order of the sums.
// - Quantized weights meet an activation row quantized once per matmul to 8 bits: blocks of 32
//   with an f32 scale for Q8_0 (ActBlockQ8_0), blocks of 256 with per-16 sums for the K-quants
//   (quant::BlockQ8K). The block dot is then exact integer arithmetic times one float scale.
// - Every kernel set produces the scalar activation quantizers' bytes.
//
// Accumulation order. For Q8_0 and the K-quants, every kernel of every set (one row, four
// rows, tiles, weight quads, packed panels; scalar, AVX2, AVX-512) performs the same float
// operations in the same order, so a result is bit for bit the same whichever kernel computed
// it, whatever batch the row was in, and on any of these instruction sets. Per weight block b,
// in order, from acc = 0:
//   Q8_0:       acc = fma(d_w * d_x, float(S), acc)        S = sum of the quant products
//   Q4_K, Q5_K: acc = fma(d_x * d, float(S), acc)          S = sum_g sc_g * (q . x)_g
//               acc = fma(-(d_x * dmin), float(M), acc)    M = sum_g mn_g * bsum_g
//   Q6_K:       acc = fma(d_x * d, float(S), acc)          S = sum_g sc_g * ((q - 32) . x)_g
// S and M are exact int32 sums (the order of integer adds does not matter); fma rounds once.
// The server relies on it: a sequence's numbers do not depend on its batch-mates, on the
// prefill chunk it fell in, or on a prefix-cache hit (engine/scheduler.h). F32/F16/BF16 rows
// have one kernel per set, so they are batch-invariant too, but differ between sets.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "quant/blocks.h"

namespace gufo::cpu::fast {

// An activation block paired with Q8_0 weights: x[i] ~= d * qs[i], qs in [-127, 127].
// NOTE(dot): an f32 scale rather than ggml's fp16 one: it costs nothing here (the format never
// leaves memory) and removes one rounding from the activation error.
struct ActBlockQ8_0 {
  float d;
  int8_t qs[quant::kQ8_0BlockElems];
};
static_assert(sizeof(ActBlockQ8_0) == 36, "ActBlockQ8_0 must be unpadded");

// sum_i w[i] * x[i] over k elements; x_row is f32 (F32/F16/BF16), ActBlockQ8_0 (Q8_0) or
// quant::BlockQ8K (Q4_K/Q5_K/Q6_K) as activation_format() says. k is a multiple of the
// weight type's block size; w_row holds k elements.
using DotFn = float (*)(int64_t k, const std::byte* w_row, const void* x_row);

// The same dot for kDotRows activation rows at once (x_rows, x_rows + x_stride, ...): out[r]
// is exactly what DotFn gives for row r. Prefill uses it so a weight block is loaded and
// unpacked (and its scales decoded) once for four activation rows instead of four times.
inline constexpr int kDotRows = 4;
using DotRowsFn = void (*)(int64_t k, const std::byte* w_row, const void* x_rows, size_t x_stride, float* out);
// kDotWeightRows weight rows (w_rows, w_rows + w_stride, ...) against kDotRows activation
// rows: out[i * kDotRows + r] is exactly DotFn(weight row i, activation row r). Register
// tiles share every load between the rows of both sides.
inline constexpr int kDotWeightRows = 2;
using DotTileFn = void (*)(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_rows, size_t x_stride,
                           float* out);

// Activation quantizers (the free functions below, or vector twins with identical output).
using QuantizeQ8_0Fn = void (*)(const float* x, ActBlockQ8_0* out, int64_t k);
using QuantizeQ8KFn = void (*)(const float* x, quant::BlockQ8K* out, int64_t k);

// kDotWeights weight rows (w_rows, w_rows + w_stride, ...) against one activation row:
// out[i] is exactly DotFn(weight row i). Decode steps (one activation row) use it so that the
// rows' accumulations run side by side in vector lanes instead of as one serial chain each.
inline constexpr int kDotWeights = 4;
using DotWeightsFn = void (*)(int64_t k, const std::byte* w_rows, size_t w_stride, const void* x_row, float* out);

// --- Packed weight panels for prefill (gemm_packed_avx2.cpp has the layouts). A panel is
// kPackedWeightRows consecutive weight rows repacked so that vector lanes hold different rows;
// a PackedGemmFn multiplies it by 1..kPackedActRows activation rows (quantized as for the row
// kernels). Packing costs about one pass over the weight rows, repaid over many activation
// rows, so matmuls use panels only for batches (prefill), never for one row (decode).
inline constexpr int kPackedWeightRows = 8;
inline constexpr int kPackedActRows = 4;
inline constexpr size_t kPackedQ8_0BlockBytes = 8 * 32 + 8 * 4;                       // per 32 elements
inline constexpr size_t kPackedKBlockBytes = 64 * 32 + 16 * 32 + 8 * 32 + 2 * 8 * 4;  // per 256
// Packs kPackedWeightRows rows (w_rows, w_rows + w_stride, ...) of k elements into `packed`.
using PackFn = void (*)(int64_t k, const std::byte* w_rows, size_t w_stride, std::byte* packed);
// out[r * out_stride + i] = dot(weight row i of the panel, activation row r), r < n_rows.
using PackedGemmFn = void (*)(int64_t k, const std::byte* packed, const void* x_rows, size_t x_stride, int n_rows,
                              float* out, size_t out_stride);
struct PackedKernels {
  PackFn pack_q8_0 = nullptr;
  PackFn pack_q4_k = nullptr;
  PackFn pack_q5_k = nullptr;
  PackFn pack_q6_k = nullptr;
  PackedGemmFn gemm_q8_0 = nullptr;  // panels of pack_q8_0
  PackedGemmFn gemm_k = nullptr;     // panels of pack_q4_k and pack_q5_k
  PackedGemmFn gemm_q6_k = nullptr;  // panels of pack_q6_k (the -32 offset leaves S exact)
  // The fewest activation rows for which the panels beat this set's row kernels (packing is
  // repaid over the rows), measured with tools/bench/matmul_bench.cpp.
  int min_rows_q8_0 = 8;
  int min_rows_k = 16;
};

struct DotKernels {
  const char* name = "";
  DotFn f32 = nullptr;
  DotFn f16 = nullptr;
  DotFn bf16 = nullptr;
  DotFn q8_0 = nullptr;
  DotFn q4_k = nullptr;
  DotFn q5_k = nullptr;
  DotFn q6_k = nullptr;
  // Optional kDotRows-row versions (nullptr: callers loop over DotFn).
  DotRowsFn q8_0_rows = nullptr;
  DotRowsFn q4_k_rows = nullptr;
  DotRowsFn q5_k_rows = nullptr;
  DotRowsFn q6_k_rows = nullptr;
  // Optional kDotWeightRows x kDotRows tiles (nullptr: callers use the row versions).
  DotTileFn q8_0_tile = nullptr;
  // Optional kDotWeights-weight-row versions for one activation row (nullptr: DotFn per row).
  DotWeightsFn q8_0_weights = nullptr;
  DotWeightsFn q4_k_weights = nullptr;
  DotWeightsFn q5_k_weights = nullptr;
  DotWeightsFn q6_k_weights = nullptr;
  // The activation quantizers this set's kernels are fed by; every set's produce the same
  // bytes as the scalar ones below.
  QuantizeQ8_0Fn quantize_q8_0 = nullptr;
  QuantizeQ8KFn quantize_q8_k = nullptr;
  // Optional packed panels (all nullptr: matmuls use the row kernels for every batch).
  PackedKernels packed;
};

// What a weight type's kernel wants as its activation row.
enum class ActivationFormat { F32, Q8_0, Q8K, Unsupported };
ActivationFormat activation_format(DType weight_type);
// The kernel of `kernels` for a weight type, or nullptr when there is none.
DotFn dot_for(const DotKernels& kernels, DType weight_type);
// Its kDotRows-row version, or nullptr.
DotRowsFn dot_rows_for(const DotKernels& kernels, DType weight_type);
// Its tile version, or nullptr.
DotTileFn dot_tile_for(const DotKernels& kernels, DType weight_type);
// Its weight-quad version, or nullptr.
DotWeightsFn dot_weights_for(const DotKernels& kernels, DType weight_type);
// Its packing and panel kernel with the panel's bytes per row of k elements; {} when none.
struct PackedPath {
  PackFn pack = nullptr;
  PackedGemmFn gemm = nullptr;
  size_t bytes = 0;      // of one packed panel of kPackedWeightRows rows
  int64_t min_rows = 0;  // use it from this many activation rows on
};
PackedPath packed_path_for(const DotKernels& kernels, DType weight_type, int64_t k);

// x[k] -> k / 32 blocks: d = max|x| / 127, q = round(x / d). k % 32 == 0.
void quantize_activation_q8_0(const float* x, ActBlockQ8_0* out, int64_t k);
// x[k] -> k / 256 blocks: d = max|x| / 127, q = round(x / d), bsums[g] = sum of quants 16g..16g+15.
void quantize_activation_q8_k(const float* x, quant::BlockQ8K* out, int64_t k);

// The CPU features the kernels care about, read once (cpuid plus the OS's saved-state mask).
struct CpuFeatures {
  bool avx2 = false;  // with FMA and F16C, and the OS saving YMM registers
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
};
const CpuFeatures& detected_cpu_features();

// The plain kernels: always available.
const DotKernels& scalar_dot_kernels();
// The AVX2 kernels, or nullptr when this build has none (non-x86) or `features` lacks AVX2.
const DotKernels* avx2_dot_kernels(const CpuFeatures& features);
// The AVX-512 kernels (F, BW and VL; dot_avx512_impl.h), or nullptr when this build or
// `features` lacks them; the VNNI variant needs AVX512_VNNI as well.
const DotKernels* avx512_dot_kernels(const CpuFeatures& features);
const DotKernels* avx512vnni_dot_kernels(const CpuFeatures& features);
// The fastest set `features` can run: AVX-512 with VNNI, AVX-512, AVX2, then scalar. The
// environment variable GUFO_CPU_KERNELS (scalar, avx2, avx512, avx512vnni), read once, caps
// the choice, so that sets can be compared on one machine.
const DotKernels& best_dot_kernels(const CpuFeatures& features);

}  // namespace gufo::cpu::fast
