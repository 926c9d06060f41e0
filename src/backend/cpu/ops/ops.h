// The CPU backend's operators: scalar references written to be read (plain loops, fp32
// accumulation), the oracle every faster CPU path and every CUDA kernel is tested against.
// Activations are f32 row-major [rows, cols]; weights any type quant::dequantize_row reads.
// Tested by tests/ops (the CUDA twins against these) and end to end by tests/unit/model.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/thread_pool.h"
#include "core/dtype.h"
#include "core/result.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace gufo::cpu {
namespace fast {
struct DotKernels;
}  // namespace fast

// A whole small tensor (norm weights, biases, rope factors) as f32.
Result<std::vector<float>> weight_to_f32(const model::Weight& w);

// out[i, :] = table[ids[i], :]; an id outside the table is an error.
Status get_rows(const model::Weight& table, std::span<const int32_t> ids, float* out);

// Each group of `group` values of each row: x / sqrt(mean(x²) + eps) * w[j].
void rms_norm(const float* x, int64_t rows, int64_t cols, const float* w, int64_t group, float eps, float* out);

// out[r, n] = Σ_k x[r, k] · w[n, k]; w is [n_out, k] of any dequantizable type.
Status mat_mul(ThreadPool& pool, const float* x, int64_t rows, int64_t k, const model::Weight& w, float* out);

// The same product, fast: SIMD dots chosen from the CPU's features (quant/dot_kernels.h).
// F32/F16/BF16 weights keep f32 activations (results differ from mat_mul only by the order of
// the sums); Q8_0 and the K-quants dot against the activation quantized to 8 bits per block
// (error bounded in tests/unit/backend/cpu_matmul_test.cpp). Defined in mat_mul_fast.cpp.
// For the quantized types a row's result is the same bits in any batch and with any kernel set
// (quant/dot_kernels.h, "Accumulation order").
Status mat_mul_fast(ThreadPool& pool, const float* x, int64_t rows, int64_t k, const model::Weight& w, float* out);
// As above with an explicit kernel set (tests pin the scalar or the AVX2 set).
Status mat_mul_fast(ThreadPool& pool, const fast::DotKernels& kernels, const float* x, int64_t rows, int64_t k,
                    const model::Weight& w, float* out);

// In place on x [rows, n_heads * head_dim]: rotates each head's pairs by position · θ_i with
// θ_i = theta^(-2i/head_dim) / freq_factors[i] (factors may be null).
void rope(float* x, int64_t rows, int64_t cols, std::span<const int32_t> positions, int64_t head_dim,
          model::RopeType type, float theta, const float* freq_factors);

// out = silu(gate) * up, elementwise.
void swiglu(const float* gate, const float* up, int64_t n, float* out);

// One layer's K and V for one sequence, rows of n_embd_kv values of `type` (F32 or F16).
// Without a block table, position p is row p. With one (a paged cache), the rows come in
// blocks of 2^block_shift positions: position p is row blocks[p >> block_shift] * block size
// + p % block size, so sequences can share the blocks of a common prefix.
struct KvView {
  DType type = DType::F16;
  void* k = nullptr;
  void* v = nullptr;
  int64_t n_embd_kv = 0;
  const int32_t* blocks = nullptr;
  int32_t block_shift = 0;

  // Offset (in elements) of position p's row from k or v.
  int64_t row_offset(int64_t p) const {
    if (blocks == nullptr) return p * n_embd_kv;
    const int64_t mask = (int64_t{1} << block_shift) - 1;
    return ((static_cast<int64_t>(blocks[p >> block_shift]) << block_shift) | (p & mask)) * n_embd_kv;
  }
};

void kv_store(const KvView& kv, int32_t position, const float* k_row, const float* v_row);

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
};

// Causal attention of one query row q [n_head * head_dim] at `position` over cache positions
// 0..position of its sequence: out [n_head * head_dim]. `scratch` holds
// attention_scratch_floats() floats. The scalar reference.
void attend(const KvView& kv, const AttentionShape& shape, const float* q, int32_t position, float* scratch,
            float* out);
// The same with AVX2/FMA/F16C (attention_avx2.cpp; x86 builds only, and only on CPUs that
// have them) for the query heads of KV heads [kv_head_first, kv_head_end) only, so a decode
// step can spread the heads over threads: GQA heads share each cache row, exp by polynomial;
// equal to attend() up to float rounding, and to attend_rows_avx2 bit for bit.
void attend_avx2(const KvView& kv, const AttentionShape& shape, const float* q, int32_t position, int64_t kv_head_first,
                 int64_t kv_head_end, float* scratch, float* out);
// Query rows of one sequence, for attend_rows_avx2: row i is q + row_index[i] * row_stride
// (all heads), at cache position positions[i]; its output goes to out + row_index[i] * row_stride.
struct AttentionRows {
  const float* q = nullptr;
  float* out = nullptr;
  int64_t row_stride = 0;
  const int64_t* row_index = nullptr;
  const int32_t* positions = nullptr;
  int64_t n_rows = 0;
};
// Prefill: the query heads of one KV head for many rows of one sequence. The head's keys and
// values up to the largest position are widened to f32 once (into head_kv) and then read by
// every row, instead of each row converting the f16 cache again; keys are stored transposed so
// that scores come eight positions per vector for up to four query heads at once. scratch
// holds attention_rows_scratch_floats(largest position) floats. Equal to attend() up to
// rounding, and for each row to attend_avx2 bit for bit.
int64_t attention_rows_scratch_floats(int32_t max_position);
void attend_rows_avx2(const KvView& kv, const AttentionShape& shape, const AttentionRows& rows, int64_t kv_head,
                      std::vector<float>& head_kv, float* scratch);
// Whether this build and CPU can run attend_avx2.
bool attend_avx2_available();

inline int64_t attention_scratch_floats(const AttentionShape& shape, int32_t position) {
  return (shape.n_head / shape.n_head_kv) * (static_cast<int64_t>(position) + 1);
}

}  // namespace gufo::cpu
