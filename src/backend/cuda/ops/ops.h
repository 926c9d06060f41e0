// The CUDA backend's operators: launchers that check their arguments, then queue kernels on
// a stream. Each has a CPU twin in backend/cpu (the oracle) and a case in tests/ops that
// compares the two over many shapes. Pointers are device memory unless a comment says so.
// A launcher returns once the work is queued; faults surface at the next synchronization.
#pragma once

#include <cstdint>

#include "backend/cuda/compat.cuh"
#include "backend/cuda/weight_view.h"
#include "core/dtype.h"
#include "core/result.h"

namespace gufo::cuda {

// Whether the current device runs mma.sync, cp.async and ldmatrix (sm_80 on; never HIP builds):
// the tensor-core paths of attention and the quantized matmul.
bool current_device_has_mma();
// The most dynamic shared memory a block of the current device may ask for, kept per device
// (asked before kernel launches); 0 where the device cannot say.
int current_device_shared_optin();

// ---- element-wise and row-wise ops ------------------------------------------------------

// out[i, :] = table[ids[i], :] as f32 (every weight layout; the CPU dequantizers' bits).
// The ids must have been checked against table.rows by the caller (they are host data there).
Status get_rows(const WeightView& table, const int32_t* ids, int64_t n_ids, float* out, gpu::stream_t stream);

// Each group of `group` values of each row: x / sqrt(mean(x^2) + eps) * w (backend/cpu/ops/
// rms_norm.cpp). The sum of squares goes by a fixed butterfly: one order in any batch.
Status rms_norm(const float* x, int64_t rows, int64_t cols, const float* w, int64_t group, float eps, float* out,
                gpu::stream_t stream);

// out = a + b, b [rows, cols] or a row [cols] broadcast (b_rows == 1).
Status add(const float* a, const float* b, int64_t rows, int64_t cols, int64_t b_rows, float* out,
           gpu::stream_t stream);

// out = silu(gate) * up, elementwise over n values (the CPU's float operations).
Status swiglu(const float* gate, const float* up, int64_t n, float* out, gpu::stream_t stream);

// out[i, :] = x[rows[i], :] for i < n_rows (rows: device indices).
Status gather_rows(const float* x, int64_t cols, const int32_t* rows, int64_t n_rows, float* out, gpu::stream_t stream);

// The rotation of each row's pairs: angles [rows, head_dim / 2, 2] = (cos, sin) of pair i's
// angle at positions[row] (device), computed in double as the CPU computes them and rounded
// to float; freq_factors [head_dim / 2] or null.
// NOTE(rope): the angles follow the positions alone, so a forward computes them once for all
// its layers (the double pow, cos and sin are the long part of a decode step's RoPE).
Status rope_angles(const int32_t* positions, int64_t rows, int64_t head_dim, float theta, const float* freq_factors,
                   float* angles, gpu::stream_t stream);

// out = x [rows, cols] (heads of head_dim) rotated by rope_angles()'s angles; out may be x.
// neox: pairs (i, i + head_dim / 2), else (2i, 2i + 1) (model::RopeType).
Status rope(const float* x, float* out, int64_t rows, int64_t cols, const float* angles, int64_t head_dim, bool neox,
            gpu::stream_t stream);

// out[r] = the index of the largest x[r, :] (ties to the lower index; NaN never wins).
Status argmax_rows(const float* x, int64_t rows, int64_t cols, int32_t* out, gpu::stream_t stream);

// ---- matmul -----------------------------------------------------------------------------

// Activations quantized for the integer matmul, exactly as the CPU quantizes them
// (backend/cpu/quant/dot_scalar.cpp): rows of k int8 quants with an f32 scale per 32 (Q8_0
// weights) or per 256 values (K-quant weights, which also need the sum of each 32 quants).
struct QuantActs {
  int8_t* qs = nullptr;      // [rows, k]
  float* d = nullptr;        // [rows, k / block]
  int32_t* sum32 = nullptr;  // [rows, k / 32], q8k only
  // The same sums split for the prefill matmul's integer MMA of the mins, q8k only: [rows, k /
  // 256, 16], per 256-block the eight sums' low 7 bits (sum & 127), then their rest (sum >> 7).
  int8_t* sum_parts = nullptr;
  int64_t rows = 0;
  int64_t k = 0;
  bool q8k = false;  // 256-blocks (K-quants) rather than 32-blocks (Q8_0)
};
// Device bytes a QuantActs of rows x k takes (its arrays, each 256-byte aligned).
size_t quant_acts_bytes(int64_t rows, int64_t k, bool q8k);
// Lays the arrays of a QuantActs out in `memory` (quant_acts_bytes of it).
QuantActs quant_acts_at(void* memory, int64_t rows, int64_t k, bool q8k);
// Quantizes x [rows, k] (row stride ldx floats) into `out`.
Status quantize_acts(const float* x, int64_t ldx, const QuantActs& out, gpu::stream_t stream);

// Which activation format a weight type's integer matmul reads (q8k), or an error when the
// type has no integer kernel (F32/F16/BF16 use mat_mul_float).
bool is_quantized_matmul_type(DType type);
bool wants_q8k(DType type);

// Routing of activation rows to experts for MoE (expert mode of mat_mul_q): expert e owns
// output rows [offsets[e], offsets[e+1]), whose activations are x rows x_rows[j] (or j
// when x_rows is null), and multiplies them with its own rows of the weight stack.
// With `active`, a launch has grid_experts blocks along z rather than n_expert, block z
// serving expert active[z] (none where it is negative): a decode step routes a token to
// n_used of n_expert experts, and blocks for the others cost more than the work (Qwen3-30B-A3B:
// 8 of 128).
struct ExpertRows {
  const int32_t* offsets = nullptr;  // [n_expert + 1], device
  const int32_t* x_rows = nullptr;   // [total rows], device, or null
  int64_t n_expert = 0;
  int64_t max_rows = 0;             // an upper bound on any expert's rows (sizes the grid)
  const int32_t* active = nullptr;  // [grid_experts], device, or null: every expert has a block
  int64_t grid_experts = 0;
};

// The blocks along z that a launch in expert mode needs.
inline int64_t expert_grid(const ExpertRows& experts) {
  return experts.active != nullptr ? experts.grid_experts : experts.n_expert;
}

// out[j, n] = sum_k x[j, k] * w[n, k] for the quantized weight types, in the CPU's
// accumulation order (quant_traits.cuh): bit for bit the CPU's result, in any batch.
// out has row stride ldo; x.rows output rows (plain mode) or the expert rows.
Status mat_mul_q(const WeightView& w, const QuantActs& x, float* out, int64_t ldo, const ExpertRows* experts,
                 gpu::stream_t stream);

// Up to three matmuls of one quantized weight type that read the same activations x (q, k
// and v; gate and up; a MoE's gate and up stacks, with `experts`): where x is a decode batch
// (at most 8 rows) one launch for all, else one mat_mul_q each; the bits of one mat_mul_q per
// weight either way.
struct MatMulPart {
  const WeightView* w;
  float* out;
  int64_t ldo;
};
inline constexpr int kMaxMatMulParts = 3;
Status mat_mul_q_parts(const MatMulPart* parts, int n_parts, const QuantActs& x, const ExpertRows* experts,
                       gpu::stream_t stream);

// The same for F32/F16/BF16 weights with f32 activations x [m, k] (row stride ldx): each
// output is T thread sums (thread t takes k = t, t + T, ...; T = 32, or 128 for weights under
// 1,024 rows) added by a fixed butterfly a warp and then in warp order, so it is one order in
// any batch (but not the CPU's order).
// With `experts`, as mat_mul_q's expert mode (x_rows maps output rows to rows of x).
Status mat_mul_float(const WeightView& w, const float* x, int64_t m, int64_t ldx, float* out, int64_t ldo,
                     const ExpertRows* experts, gpu::stream_t stream);

// ---- the paged KV cache -------------------------------------------------------------------

// One layer of the paged KV cache in device memory: position p of a sequence whose block
// table is `table` lives in row (table[p >> block_shift] << block_shift) | (p & mask).
struct KvLayer {
  void* k = nullptr;  // [n_blocks * block_size, n_embd_kv] of f16 or f32
  void* v = nullptr;
  bool f16 = true;
  int64_t n_embd_kv = 0;
  int32_t block_shift = 0;
  const int32_t* tables = nullptr;  // [n_seq, table_stride]
  int64_t table_stride = 0;
};

// The sequence id of a padding row (backend::kPaddingSeq; cuda_backend.cpp checks they agree),
// named here so that kernels need not include the model headers.
inline constexpr int32_t kPaddingSeq = -1;

// The batch's per-row data on the device.
struct BatchRows {
  const int32_t* positions = nullptr;
  const int32_t* seq_ids = nullptr;  // kPaddingSeq rows write and read nothing
  int64_t n_rows = 0;
};

// ---- fused runs (fusion_plan.h) ---------------------------------------------------------

// sum = a + b, then out = rms_norm(sum) over whole rows (group = cols), as add() and rms_norm()
// compute them: the same bits. b null: out = rms_norm(a) (sum unused). quant non-null: the
// rows of out are also quantized into it, as quantize_acts() does.
Status add_rms_norm(const float* a, const float* b, int64_t rows, int64_t cols, float* sum, const float* w, float eps,
                    float* out, const QuantActs* quant, gpu::stream_t stream);

// Qwen3's attention inputs: q_normed = rms_norm(q) per head with q_norm (and k alike), then
// q_out, k_out = rope (neox) of those by rope_angles()'s angles, as rms_norm() and rope()
// compute them.
// Every buffer 16-byte aligned; head_dim a multiple of 8 up to 128. With kv.k set, also
// kv_store() of k_out and v at the batch's rows (the attention that reads them then stores
// nothing).
struct QkNormRopeArgs {
  const float* q = nullptr;  // [rows, n_head * head_dim]
  const float* k = nullptr;  // [rows, n_head_kv * head_dim]
  int64_t rows = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  const float* q_norm = nullptr;  // [head_dim]
  const float* k_norm = nullptr;
  float eps = 1e-6f;
  const float* angles = nullptr;       // [rows, head_dim / 2, 2] (rope_angles)
  const int32_t* positions = nullptr;  // the KV store's
  float* q_normed = nullptr;
  float* k_normed = nullptr;
  float* q_out = nullptr;
  float* k_out = nullptr;
  KvLayer kv;  // kv.k null: no store
  const int32_t* seq_ids = nullptr;
  const float* v = nullptr;  // [rows, n_head_kv * head_dim]
};
bool qk_norm_rope_supports(int64_t head_dim);

// out = silu(gate) * up over [rows, cols], as swiglu() computes it, and out quantized into
// `quant` as quantize_acts() does (cols a multiple of its block).
Status swiglu_quant(const float* gate, const float* up, int64_t rows, int64_t cols, float* out, const QuantActs& quant,
                    gpu::stream_t stream);
Status qk_norm_rope(const QkNormRopeArgs& args, gpu::stream_t stream);

// ---- attention --------------------------------------------------------------------------

// Writes k and v rows [n_rows, n_embd_kv] (row strides ldk, ldv) into the cache at their
// positions, converted as the CPU converts them (quant/half.h).
Status kv_store(const KvLayer& kv, const BatchRows& batch, const float* k, int64_t ldk, const float* v, int64_t ldv,
                gpu::stream_t stream);

struct AttentionShape {
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;
  float scale = 1.0f;
};

// NOTE(attention): the KV positions of a row are taken in splits of this many absolute
// positions, tiles of 32 within a split (online softmax from a fresh state per split), and the
// splits merged in order by the same online rule, whether one block walks every split of a row
// (prefill) or each split has a block of its own (decode): a row's numbers never depend on
// the batch. Changing this constant changes the numbers.
inline constexpr int64_t kAttentionSplit = 256;

// Whether attention() runs this head layout (head_dim up to 256, up to 32 query heads per KV head).
bool attention_supports(const AttentionShape& shape);
// Scratch bytes attention() needs for `n_rows` rows whose largest position is max_position.
size_t attention_scratch_bytes(const AttentionShape& shape, int64_t n_rows, int32_t max_position);
// The length of the int32 tickets attention() counts finished splits on, for any batch.
int64_t attention_tickets(const AttentionShape& shape);
// Causal attention of q [n_rows, n_head * head_dim] (row stride ldq) over each row's cache
// positions 0..position: out [n_rows, n_head * head_dim] (row stride ldo). Padding rows give 0.
// max_position: the largest position in the batch (host data). tickets: attention_tickets()
// int32 zeros in device memory, which every call leaves zero (a fresh zeroed buffer once; then
// the same one for every call, never two calls at once).
Status attention(const KvLayer& kv, const BatchRows& batch, const AttentionShape& shape, const float* q, int64_t ldq,
                 int32_t max_position, void* scratch, int32_t* tickets, float* out, int64_t ldo, gpu::stream_t stream);

// ---- mixture of experts -------------------------------------------------------------------

// Device scratch of moe_route for n_rows tokens.
struct MoeRouting {
  int32_t* choice_expert = nullptr;  // [n_rows, n_used], most probable first
  float* choice_weight = nullptr;    // [n_rows, n_used]
  int32_t* offsets = nullptr;        // [n_expert + 1]: expert e's slots
  int32_t* slot_rows = nullptr;      // [n_rows * n_used]: the token of each slot (by expert, tokens ascending)
  int32_t* row_slots = nullptr;      // [n_rows, n_used]: each token's slots, experts ascending
  float* row_weights = nullptr;      // [n_rows, n_used]: the weights of row_slots
  int32_t* active = nullptr;         // [moe_grid_experts]: the experts with slots, ascending, then -1
};
// The length of MoeRouting::active: no more experts can have slots.
inline int64_t moe_grid_experts(int64_t n_rows, int64_t n_expert, int64_t n_used) {
  return n_rows * n_used < n_expert ? n_rows * n_used : n_expert;
}
size_t moe_routing_bytes(int64_t n_rows, int64_t n_expert, int64_t n_used);
// Whether moe_route() routes n_used of n_expert experts (up to 32 of 512).
bool moe_supports(int64_t n_expert, int64_t n_used);
MoeRouting moe_routing_at(void* memory, int64_t n_rows, int64_t n_expert, int64_t n_used);

// Per token: softmax over the router logits [n_rows, n_expert], the n_used most probable
// experts (ties to the lower index), renormalized when `normalize` (backend/cpu/ops/moe.h,
// route_token); then the slots grouped by expert.
Status moe_route(const float* logits, int64_t n_rows, int64_t n_expert, int64_t n_used, bool normalize,
                 const MoeRouting& routing, gpu::stream_t stream);
// out[r, :] = sum over r's experts in ascending order of w * y[slot, :] (multiply, then add:
// the CPU's operations), y [n_rows * n_used, cols].
Status moe_combine(const float* y, int64_t cols, const MoeRouting& routing, int64_t n_rows, int64_t n_used, float* out,
                   gpu::stream_t stream);

}  // namespace gufo::cuda
