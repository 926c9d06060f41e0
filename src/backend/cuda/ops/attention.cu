// The paged KV cache write and causal attention over it (see ops.h). CPU references:
// backend/cpu/ops/attention.cpp (kv_store, attend).
// A block serves one row and one KV head: one lane group per query head of the GQA group,
// sharing each tile of 32 keys and values (widened to f32 in shared memory). Positions go in
// splits of kAttentionSplit absolute positions (NOTE(attention) in ops.h); within a split,
// tiles of 32 in order with the usual online softmax; splits merge in order by the same rule.
// With few rows each split has a block of its own and a second kernel merges them; with many
// a block walks all splits of its row. Either way every float operation of a row is the same.
// An f16 cache with head_dim 64 or 128 goes to attention_mma.cu (tensor cores) instead: the
// layout and cache type pick the kernel, never the batch.
// Tested by tests/ops/attention_test.cpp.
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/attention_mma.cuh"
#include "backend/cuda/ops/attention_split.cuh"
#include "backend/cuda/ops/ops.h"
#include "quant/half.h"

namespace gufo::cuda {
namespace {

constexpr int kTile = 32;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxDimsPerLane = kMaxHeadDim / 32;
// NOTE(attention): up to this many rows each split gets a block (decode: a long context still
// fills the GPU); beyond, a block walks its row's splits (prefill has blocks enough). 64, not
// 16: a batch of decoding sequences is one run per row, which attention_mma.cu's walking
// blocks would take one after another (17 streams would get 2 blocks per KV head). Either
// way a row gets the same bits (attention_split.cuh), so the bound is free to move.
constexpr int64_t kSplitBlocksMaxRows = 64;

__device__ inline float load_kv(const KvLayer& kv, const void* base, int64_t index) {
  return kv.f16 ? quant::fp16_to_fp32(static_cast<const uint16_t*>(base)[index])
                : static_cast<const float*>(base)[index];
}

__global__ void kv_store_kernel(KvLayer kv, BatchRows batch, const float* k, int64_t ldk, const float* v, int64_t ldv) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t row = blockIdx.x;
  const int32_t seq = batch.seq_ids[row];
  if (seq == kPaddingSeq) return;
  const int64_t dst = cache_row(kv, seq, batch.positions[row]) * kv.n_embd_kv;
  for (int64_t j = threadIdx.x; j < kv.n_embd_kv; j += blockDim.x) {
    store_kv(kv, kv.k, dst + j, k[row * ldk + j]);
    store_kv(kv, kv.v, dst + j, v[row * ldv + j]);
  }
}

// A softmax state: running max, sum of weights, and this lane's dims of the weighted values.
struct Softmax {
  float m;
  float l;
  float o[kMaxDimsPerLane];
};

__device__ inline void reset(Softmax& s) {
  s.m = -INFINITY;
  s.l = 0.0f;
#pragma unroll
  for (int j = 0; j < kMaxDimsPerLane; ++j) s.o[j] = 0.0f;
}

// Merges a finished split (m, l, o) into the running state, in split order.
__device__ inline void merge(Softmax& total, float m, float l, const float* o) {
  float a, b;
  merge_weights(total.m, total.l, m, l, a, b);
#pragma unroll
  for (int j = 0; j < kMaxDimsPerLane; ++j) total.o[j] = total.o[j] * a + o[j] * b;
}

// One split of one query head (this lane group's) into `s`, from a fresh state.
__device__ void attend_split(const AttentionArgs& a, int32_t seq, int32_t position, int64_t split, int64_t kv_head,
                             const float* q_shared, float* k_tile, float* v_tile, Softmax& s) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t hd = a.shape.head_dim;
  const int64_t stride = hd + 1;  // NOTE(attention): one float of padding: lane rows fall in distinct banks
  const int64_t begin = split * kAttentionSplit;
  const int64_t end = min(static_cast<int64_t>(position) + 1, begin + kAttentionSplit);
  reset(s);
  for (int64_t tile0 = begin; tile0 < end; tile0 += kTile) {
    __syncthreads();  // the previous tile is no longer read
    for (int64_t i = threadIdx.x; i < kTile * hd; i += blockDim.x) {
      const int64_t p = tile0 + i / hd;
      const int64_t d = i % hd;
      float kval = 0.0f, vval = 0.0f;
      if (p < end) {
        const int64_t index = cache_row(a.kv, seq, static_cast<int32_t>(p)) * a.kv.n_embd_kv + kv_head * hd + d;
        kval = load_kv(a.kv, a.kv.k, index);
        vval = load_kv(a.kv, a.kv.v, index);
      }
      k_tile[(i / hd) * stride + d] = kval;
      v_tile[(i / hd) * stride + d] = vval;
    }
    __syncthreads();
    const bool valid = tile0 + lane < end;
    float score = -INFINITY;
    if (valid) {
      float dot = 0.0f;
      for (int64_t d = 0; d < hd; ++d) dot = fmaf(q_shared[d], k_tile[lane * stride + d], dot);
      score = dot * a.shape.scale;
    }
    const float m_new = fmaxf(s.m, gpu::group_max(score));
    const float alpha = expf(s.m - m_new);
    const float p = valid ? expf(score - m_new) : 0.0f;
    s.l = s.l * alpha + gpu::group_sum(p);
    // Each output dim: fma over the tile's positions in order. The shuffles run on every lane.
    const int n_dims = static_cast<int>((hd + 31) / 32);
#pragma unroll
    for (int j = 0; j < kMaxDimsPerLane; ++j) s.o[j] *= alpha;
    for (int pp = 0; pp < kTile; ++pp) {
      const float weight = gpu::shfl(p, pp);
      const float* v_row = v_tile + pp * stride;
#pragma unroll
      for (int j = 0; j < kMaxDimsPerLane; ++j) {
        const int64_t d = lane + 32 * j;
        if (j < n_dims && d < hd) s.o[j] = fmaf(weight, v_row[d], s.o[j]);
      }
    }
    s.m = m_new;
  }
}

// blockIdx: x = row, y = KV head, z = split (split-block mode) or 0 (a block per row).
__global__ void attention_kernel(AttentionArgs a) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  extern __shared__ float shared[];
  const int64_t row = blockIdx.x;
  const int64_t kv_head = blockIdx.y;
  const int64_t hd = a.shape.head_dim;
  const int64_t group = a.shape.n_head / a.shape.n_head_kv;
  const int64_t head = kv_head * group + threadIdx.x / 32;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int32_t seq = a.batch.seq_ids[row];
  const int32_t position = a.batch.positions[row];
  const bool split_blocks = a.partials != nullptr;
  float* q_shared = shared + (threadIdx.x / 32) * hd;
  float* k_tile = shared + group * hd;
  float* v_tile = k_tile + kTile * (hd + 1);
  float* out = a.out + row * a.ldo + head * hd;

  if (seq == kPaddingSeq) {
    if (!split_blocks || blockIdx.z == 0) {
      for (int64_t d = lane; d < hd; d += 32) out[d] = 0.0f;
    }
    return;
  }
  const int64_t last_split = position / kAttentionSplit;
  if (split_blocks && static_cast<int64_t>(blockIdx.z) > last_split) return;
  for (int64_t d = lane; d < hd; d += 32) q_shared[d] = a.q[row * a.ldq + head * hd + d];
  // (attend_split's first barrier orders these writes before any read)

  Softmax s;
  if (split_blocks) {
    attend_split(a, seq, position, blockIdx.z, kv_head, q_shared, k_tile, v_tile, s);
    float* partial = a.partials + partial_offset(row, head, blockIdx.z, a.shape.n_head, a.max_splits, hd);
    if (lane == 0) {
      partial[0] = s.m;
      partial[1] = s.l;
    }
#pragma unroll
    for (int j = 0; j < kMaxDimsPerLane; ++j) {
      if (lane + 32 * j < hd) partial[2 + lane + 32 * j] = s.o[j];
    }
    return;
  }
  Softmax total;
  reset(total);
  for (int64_t split = 0; split <= last_split; ++split) {
    attend_split(a, seq, position, split, kv_head, q_shared, k_tile, v_tile, s);
    merge(total, s.m, s.l, s.o);
  }
#pragma unroll
  for (int j = 0; j < kMaxDimsPerLane; ++j) {
    if (lane + 32 * j < hd) out[lane + 32 * j] = total.o[j] / total.l;
  }
}

// Split-block mode, second step: one lane group per (row, head) merges the splits in order.
__global__ void attention_merge_kernel(BatchRows batch, AttentionShape shape, const float* partials, int64_t max_splits,
                                       float* out_all, int64_t ldo) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t item = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (item >= batch.n_rows * shape.n_head) return;
  const int64_t row = item / shape.n_head;
  const int64_t head = item % shape.n_head;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t hd = shape.head_dim;
  if (batch.seq_ids[row] == kPaddingSeq) return;  // the attention kernel wrote zeros
  const int64_t last_split = batch.positions[row] / kAttentionSplit;
  merge_partials<kMaxDimsPerLane>(partials + partial_offset(row, head, 0, shape.n_head, max_splits, hd), hd + 2,
                                  last_split + 1, hd, lane, out_all + row * ldo + head * hd);
}

size_t attention_shared_bytes(const AttentionShape& shape) {
  const int64_t group = shape.n_head / shape.n_head_kv;
  return static_cast<size_t>(group * shape.head_dim + 2 * kTile * (shape.head_dim + 1)) * sizeof(float);
}

}  // namespace

Status merge_splits(const BatchRows& batch, const AttentionShape& shape, const float* partials, int64_t max_splits,
                    float* out, int64_t ldo, gpu::stream_t stream) {
  const int64_t items = batch.n_rows * shape.n_head;
  (void)gpu::launch(attention_merge_kernel, static_cast<unsigned>((items + 7) / 8), 256, 0, stream, batch, shape,
                    partials, max_splits, out, ldo);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "attention merge(rows=" + std::to_string(batch.n_rows) + ")");
  return {};
}

Status kv_store(const KvLayer& kv, const BatchRows& batch, const float* k, int64_t ldk, const float* v, int64_t ldv,
                gpu::stream_t stream) {
  if (batch.n_rows == 0) return {};
  (void)gpu::launch(kv_store_kernel, static_cast<unsigned>(batch.n_rows), 256, 0, stream, kv, batch, k, ldk, v, ldv);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "kv_store(rows=" + std::to_string(batch.n_rows) + ")");
  return {};
}

bool attention_supports(const AttentionShape& shape) {
  return shape.n_head_kv >= 1 && shape.n_head % shape.n_head_kv == 0 && shape.head_dim >= 1 &&
         shape.head_dim <= kMaxHeadDim && (shape.n_head / shape.n_head_kv) * 32 <= 1024;
}

size_t attention_scratch_bytes(const AttentionShape& shape, int64_t n_rows, int32_t max_position) {
  if (n_rows > kSplitBlocksMaxRows) return 0;
  const int64_t splits = max_position / kAttentionSplit + 1;
  return static_cast<size_t>(n_rows * shape.n_head * splits * (shape.head_dim + 2)) * sizeof(float);
}

int64_t attention_tickets(const AttentionShape& shape) { return kSplitBlocksMaxRows * shape.n_head_kv; }

Status attention(const KvLayer& kv, const BatchRows& batch, const AttentionShape& shape, const float* q, int64_t ldq,
                 int32_t max_position, void* scratch, int32_t* tickets, float* out, int64_t ldo, gpu::stream_t stream) {
  const std::string context = "attention(rows=" + std::to_string(batch.n_rows) +
                              ", heads=" + std::to_string(shape.n_head) + "/" + std::to_string(shape.n_head_kv) + "x" +
                              std::to_string(shape.head_dim) + ")";
  if (!attention_supports(shape)) {
    return Error{context + ": unsupported head layout (head_dim up to " + std::to_string(kMaxHeadDim) +
                     ", up to 32 query heads per KV head)",
                 ErrorKind::Unsupported};
  }
  const int64_t group = shape.n_head / shape.n_head_kv;
  if (batch.n_rows == 0) return {};
  const int64_t max_splits = max_position / kAttentionSplit + 1;
  const bool split_blocks = batch.n_rows <= kSplitBlocksMaxRows;
  if (split_blocks && scratch == nullptr) return Error{context + ": no scratch for the split partials"};
  if (attention_mma_supports(kv, shape)) {
    float* partials = split_blocks ? static_cast<float*>(scratch) : nullptr;
    return attention_mma(kv, batch, shape, q, ldq, max_splits, partials, tickets, out, ldo, stream);
  }
  AttentionArgs args{kv,
                     batch,
                     shape,
                     q,
                     ldq,
                     out,
                     ldo,
                     split_blocks ? static_cast<float*>(scratch) : nullptr,
                     max_splits,
                     nullptr,
                     static_cast<int>(group)};
  const size_t smem = attention_shared_bytes(shape);
  // NOTE(attention): past the default 48 KiB (head_dim 256 with a large GQA group) a block must
  // ask for its shared memory, up to what the device allows; the common layouts never ask.
  constexpr size_t kDefaultShared = 48 * 1024;
  if (smem > kDefaultShared) {
    const int optin = current_device_shared_optin();
    if (smem > static_cast<size_t>(optin)) {
      return Error{context + ": needs " + std::to_string(smem) +
                       " bytes of shared memory per block, the device allows " + std::to_string(optin),
                   ErrorKind::Unsupported};
    }
    GUFO_GPU_RETURN_IF_ERROR(gpu::set_max_dynamic_shared(attention_kernel, static_cast<int>(smem)), context);
  }
  const dim3 grid(static_cast<unsigned>(batch.n_rows), static_cast<unsigned>(shape.n_head_kv),
                  static_cast<unsigned>(split_blocks ? max_splits : 1));
  (void)gpu::launch(attention_kernel, grid, static_cast<unsigned>(group * 32), smem, stream, args);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  if (split_blocks) return merge_splits(batch, shape, args.partials, max_splits, out, ldo, stream);
  return {};
}

}  // namespace gufo::cuda
