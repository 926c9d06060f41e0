// Causal attention over the paged f16 KV cache on tensor cores (mma.sync m16n8k16, f32
// accumulate). CPU reference: backend/cpu/ops/attention.cpp (attend).
// A block serves a window of consecutive batch rows and one KV head. Its MMA rows are (row,
// query head of the GQA group) pairs, 16 per warp, so the group's heads share each tile of
// keys and a prefill shares it across the window's rows too; a decode step fills a warp's rows
// with its group's heads (padding where the group is smaller than 16). The window's rows are
// taken as runs of one sequence (a prefill is one run, a decode batch one run per row).
// Positions go in splits of kAttentionSplit absolute positions and tiles of kKvTile, as in
// attention.cu: each split from a fresh online-softmax state, splits merged in order by the
// rule of attention_split.cuh (in the block, or by merge_splits after split blocks).
// Precision: K and V are f16 already; Q (scaled) and the softmax weights P go in as f16
// pairs hi + lo (two MMAs), so the products keep ~22 bits and the result stays within a few
// 1e-7 of the f32 CPU kernel.
// Batch invariance: an MMA's output element depends only on its own row of A and column of
// B, the tiles lie at fixed absolute positions, and a tile or split in which a row has no
// key (it is there for other rows of the run) leaves the row's state exactly as it was
// (weights 0, rescale by exactly 1); so a row's floats are the same alone or in any batch.
// Tested by tests/ops/attention_test.cpp.
#if !defined(GUFO_HIP)
#include <cuda_fp16.h>
#endif

#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/async_copy.cuh"
#include "backend/cuda/ops/attention_mma.cuh"
#include "backend/cuda/ops/attention_split.cuh"

namespace gufo::cuda {
namespace {

constexpr int kKvTile = 64;  // keys per tile, at multiples of 64 in absolute positions
constexpr int kPad = 8;      // halves of padding per shared K/V row: fragment loads hit distinct banks
constexpr int kMaxWarps = 4;

#if !defined(GUFO_HIP)
__device__ inline uint32_t half2_bits(__half2 h) { return *reinterpret_cast<uint32_t*>(&h); }

// (x0, x1) as two f16 pairs, hi + lo = x to about 22 bits (x0 in the low halves).
__device__ inline void split_half2(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  const __half2 h = __floats2half2_rn(x0, x1);
  const float2 back = __half22float2(h);
  hi = half2_bits(h);
  lo = half2_bits(__floats2half2_rn(x0 - back.x, x1 - back.y));
}

// c += A (16 x 16, f16, row) x B (16 x 8, f16, col). Fragments (g = lane / 4, t = lane % 4):
// a[0] row g cols 2t.., a[1] row g+8, a[2] row g cols 8+2t.., a[3] row g+8 cols 8+2t..;
// b0 rows 2t.. col g, b1 rows 8+2t..; c[0..1] row g cols 2t, 2t+1, c[2..3] row g+8.
__device__ inline void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// The B fragment of a 16 x 8 block of a row-major [k][n] f16 matrix in shared memory: lane i
// (< 16) names row i; .trans hands each lane rows 2t, 2t+1 (and 8 + ...) of column g.
__device__ inline void ldmatrix_trans(uint32_t& b0, uint32_t& b1, const __half* row) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(b0), "=r"(b1)
               : "r"(address)
               : "memory");
}

#endif

// A window's runs of one sequence (window-relative [first, end)), and each run's last position.
struct Runs {
  int first[16 * kMaxWarps];
  int end[16 * kMaxWarps];
  int32_t seq[16 * kMaxWarps];
  int32_t max_position[16 * kMaxWarps];
  int count;
};

// (unused by HIP builds, which have no tensor-core path yet)
[[maybe_unused]] __device__ void find_runs(const BatchRows& batch, int64_t t0, int tokens, Runs& runs) {
  int n = 0;
  for (int i = 0; i < tokens && t0 + i < batch.n_rows; ++i) {
    const int32_t seq = batch.seq_ids[t0 + i];
    const int32_t position = batch.positions[t0 + i];
    if (n > 0 && runs.seq[n - 1] == seq) {
      runs.end[n - 1] = i + 1;
      runs.max_position[n - 1] = max(runs.max_position[n - 1], position);
    } else {
      runs.first[n] = i;
      runs.end[n] = i + 1;
      runs.seq[n] = seq;
      runs.max_position[n] = position;
      ++n;
    }
  }
  runs.count = n;
}

// This lane's two MMA rows, g and g + 8 of its warp's 16: (batch row or -1, query head,
// window token, position).
struct LaneRows {
  int token[2];
  int64_t row[2], head[2];
  int32_t position[2];
};

template <int kDim>
struct Tiles {
  static constexpr int kSteps = kDim / 16;       // k-steps of Q K^T over the head dims
  static constexpr int kDimTiles = kDim / 8;     // n-tiles of the output
  static constexpr int kKeyTiles = kKvTile / 8;  // n-tiles of the scores
  static constexpr int kStride = kDim + kPad;    // halves per shared K/V row
  static constexpr int kChunks = kDim / 8;       // 16-byte pieces per key and head
};

#if !defined(GUFO_HIP)
// Q * scale of the lane's rows as f16 hi + lo A fragments; zeros for rows outside the batch.
template <int kDim>
__device__ __forceinline__ void load_q(const AttentionArgs& a, const LaneRows& rows, int t,
                                       uint32_t (&q_hi)[kDim / 16][4], uint32_t (&q_lo)[kDim / 16][4]) {
#pragma unroll
  for (int kk = 0; kk < kDim / 16; ++kk) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int i = r % 2;
      const int dim = 16 * kk + 2 * t + 8 * (r / 2);
      float2 v = make_float2(0.0f, 0.0f);
      if (rows.row[i] >= 0) v = *reinterpret_cast<const float2*>(a.q + rows.row[i] * a.ldq + rows.head[i] * kDim + dim);
      split_half2(v.x * a.shape.scale, v.y * a.shape.scale, q_hi[kk][r], q_lo[kk][r]);
    }
  }
}

// Where the tile of keys tile0.. of `seq` lies in the pool, for copy_tile: each key's place is
// looked up once (a block-table read), not once per 16-byte piece, so the copies go out back
// to back. -1 from `end` on. By the whole block (it ends with a barrier).
__device__ __forceinline__ void locate_tile(const AttentionArgs& a, int32_t seq, int64_t kv_head, int64_t tile0,
                                            int64_t end, int kDim, int64_t* key_at) {
  for (int key = static_cast<int>(threadIdx.x); key < kKvTile; key += 32 * kMaxWarps) {
    const int64_t p = tile0 + key;
    key_at[key] = p < end ? cache_row(a.kv, seq, static_cast<int32_t>(p)) * a.kv.n_embd_kv + kv_head * kDim : -1;
  }
  __syncthreads();
}

// Starts copying a located tile (zeros where key_at is -1) into shared memory, by the whole
// block, as one group of async copies; the caller waits for it. The buffers must no longer be
// read (the caller's barrier after the last tile that used them).
template <int kDim>
__device__ __forceinline__ void copy_tile(const AttentionArgs& a, const int64_t* key_at, __half* k_tile,
                                          __half* v_tile) {
  using T = Tiles<kDim>;
  for (int idx = static_cast<int>(threadIdx.x); idx < kKvTile * T::kChunks; idx += 32 * kMaxWarps) {
    const int key = idx / T::kChunks;
    const int chunk = idx % T::kChunks;
    const bool valid = key_at[key] >= 0;
    const int64_t at = valid ? key_at[key] + chunk * 8 : 0;
    copy16_async(k_tile + key * T::kStride + chunk * 8, static_cast<const __half*>(a.kv.k) + at, valid);
    copy16_async(v_tile + key * T::kStride + chunk * 8, static_cast<const __half*>(a.kv.v) + at, valid);
  }
  copies_commit();
}

// The positions [first, end) a run of this block covers (none when first >= end): its splits
// from split_begin on (split mode: that one split).
struct RunSpan {
  int64_t first, end;
};
__device__ __forceinline__ RunSpan run_span(const Runs& runs, int run, int64_t split_begin, bool split_mode) {
  const int32_t max_position = runs.max_position[run];
  if (runs.seq[run] == kPaddingSeq || split_begin > max_position / kAttentionSplit) return {0, 0};
  const int64_t first = split_begin * kAttentionSplit;
  const int64_t end = split_mode ? min(static_cast<int64_t>(max_position) + 1, first + kAttentionSplit)
                                 : static_cast<int64_t>(max_position) + 1;
  return {first, end};
}

// s = the warp's 16 rows of scaled Q against kTiles n-tiles of the tile's keys, from n-tile
// j0 on (a whole tile: kKeyTiles from 0). Each n-tile's products are the same MMAs in the
// same order whichever warp computes them.
template <int kDim, int kTiles>
__device__ __forceinline__ void scores(const uint32_t (&q_hi)[kDim / 16][4], const uint32_t (&q_lo)[kDim / 16][4],
                                       const __half* k_tile, int j0, int g, int t, float (&s)[kTiles][4]) {
  using T = Tiles<kDim>;
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < T::kSteps; ++kk) {
      const __half* k_row = k_tile + (8 * (j0 + j) + g) * T::kStride + 16 * kk + 2 * t;
      const uint32_t b0 = *reinterpret_cast<const uint32_t*>(k_row);
      const uint32_t b1 = *reinterpret_cast<const uint32_t*>(k_row + 8);
      mma(s[j], q_hi[kk], b0, b1);
      mma(s[j], q_lo[kk], b0, b1);
    }
  }
}

// Split mode's warps share one set of MMA rows: each computes some n-tiles of the scores and
// leaves them in `rows` ([16][kScoreStride] floats) for all of them to read back whole.
constexpr int kScoreStride = kKvTile + 8;
template <int kTiles>
__device__ __forceinline__ void store_scores(const float (&s)[kTiles][4], int j0, int g, int t, float* rows) {
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    *reinterpret_cast<float2*>(rows + g * kScoreStride + 8 * (j0 + j) + 2 * t) = make_float2(s[j][0], s[j][1]);
    *reinterpret_cast<float2*>(rows + (g + 8) * kScoreStride + 8 * (j0 + j) + 2 * t) = make_float2(s[j][2], s[j][3]);
  }
}
__device__ __forceinline__ void load_scores(const float* rows, int g, int t, float (&s)[kKvTile / 8][4]) {
#pragma unroll
  for (int j = 0; j < kKvTile / 8; ++j) {
    const float2 top = *reinterpret_cast<const float2*>(rows + g * kScoreStride + 8 * j + 2 * t);
    const float2 bottom = *reinterpret_cast<const float2*>(rows + (g + 8) * kScoreStride + 8 * j + 2 * t);
    s[j][0] = top.x, s[j][1] = top.y, s[j][2] = bottom.x, s[j][3] = bottom.y;
  }
}

// The online softmax step of row i (0: g, 1: g + 8) over the tile: masks the keys the row
// does not see, turns its scores into weights and rescales its state (m, l, and the kTiles
// n-tiles of o this warp keeps). A row's 64 scores lie in the 4 lanes of its quad.
template <int kTiles>
__device__ __forceinline__ void softmax_step(int i, bool sees_any, int32_t position, int64_t tile0, int t,
                                             float (&s)[kKvTile / 8][4], float& m, float& l, float (&o)[kTiles][4]) {
  float tile_max = -INFINITY;
#pragma unroll
  for (int j = 0; j < kKvTile / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const bool seen = sees_any && tile0 + 8 * j + 2 * t + e <= position;
      s[j][2 * i + e] = seen ? s[j][2 * i + e] : -INFINITY;
      tile_max = fmaxf(tile_max, s[j][2 * i + e]);
    }
  }
  tile_max = fmaxf(tile_max, gpu::shfl_xor(tile_max, 1));
  tile_max = fmaxf(tile_max, gpu::shfl_xor(tile_max, 2));
  const float m_new = fmaxf(m, tile_max);
  // NOTE(attention_mma): a row with no key in this tile keeps its state exactly.
  const float alpha = m_new == -INFINITY ? 1.0f : expf(m - m_new);
  float sum = 0.0f;
#pragma unroll
  for (int j = 0; j < kKvTile / 8; ++j) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const float p = m_new == -INFINITY ? 0.0f : expf(s[j][2 * i + e] - m_new);
      s[j][2 * i + e] = p;
      sum += p;
    }
  }
  sum += gpu::shfl_xor(sum, 1);
  sum += gpu::shfl_xor(sum, 2);
  l = l * alpha + sum;
  m = m_new;
#pragma unroll
  for (int j = 0; j < kTiles; ++j) {
    o[j][2 * i] *= alpha;
    o[j][2 * i + 1] *= alpha;
  }
}

// o += P V for kTiles n-tiles of the output from n-tile j0 on, the weights as A fragments
// straight from the score accumulators.
template <int kDim, int kTiles>
__device__ __forceinline__ void add_weighted_values(const float (&p)[kKvTile / 8][4], const __half* v_tile, int j0,
                                                    int lane, float (&o)[kTiles][4]) {
#pragma unroll
  for (int kk = 0; kk < kKvTile / 16; ++kk) {
    uint32_t p_hi[4], p_lo[4];
    split_half2(p[2 * kk][0], p[2 * kk][1], p_hi[0], p_lo[0]);
    split_half2(p[2 * kk][2], p[2 * kk][3], p_hi[1], p_lo[1]);
    split_half2(p[2 * kk + 1][0], p[2 * kk + 1][1], p_hi[2], p_lo[2]);
    split_half2(p[2 * kk + 1][2], p[2 * kk + 1][3], p_hi[3], p_lo[3]);
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      uint32_t b0, b1;
      ldmatrix_trans(b0, b1, v_tile + (16 * kk + lane % 16) * Tiles<kDim>::kStride + 8 * (j0 + j));
      mma(o[j], p_hi, b0, b1);
      mma(o[j], p_lo, b0, b1);
    }
  }
}

// A finished split of row i: its partial (split blocks) or merged into the running totals. o
// holds the warp's kTiles n-tiles of the output from n-tile j0 on (walk mode: all of them).
template <int kDim, bool kSplit, int kTiles>
__device__ __forceinline__ void finish_split(const AttentionArgs& a, const LaneRows& rows, int i, int64_t split, int g,
                                             int t, float m, float l, const float (&o)[kTiles][4], int j0,
                                             float& total_m, float& total_l, float* totals) {
  if (kSplit && rows.position[i] < kAttentionSplit) {
    // The row's only split: merged into a fresh total it becomes (0 + o, l) (weights 0 and 1),
    // so (0 + o) / l here is what merge_partials would write (-0 too), without the trip
    // through memory.
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      *reinterpret_cast<float2*>(a.out + rows.row[i] * a.ldo + rows.head[i] * kDim + 8 * (j0 + j) + 2 * t) =
          make_float2((0.0f + o[j][2 * i]) / l, (0.0f + o[j][2 * i + 1]) / l);
    }
    return;
  }
  if constexpr (kSplit) {
    float* partial = a.partials + partial_offset(rows.row[i], rows.head[i], split, a.shape.n_head, a.max_splits, kDim);
    if (t == 0 && j0 == 0) {  // (every warp has the same m and l)
      partial[0] = m;
      partial[1] = l;
    }
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      partial[2 + 8 * (j0 + j) + 2 * t] = o[j][2 * i];
      partial[2 + 8 * (j0 + j) + 2 * t + 1] = o[j][2 * i + 1];
    }
  } else {
    static_assert(kTiles == kDim / 8, "walk mode keeps every n-tile of the output");
    float wa, wb;
    merge_weights(total_m, total_l, m, l, wa, wb);
#pragma unroll
    for (int j = 0; j < kTiles; ++j) {
      float* total = totals + (g + 8 * i) * kDim + 8 * j + 2 * t;
      total[0] = total[0] * wa + o[j][2 * i] * wb;
      total[1] = total[1] * wa + o[j][2 * i + 1] * wb;
    }
  }
}

// Writes row i's output: `totals` / total_l, or zeros (totals == null, a padding row).
template <int kDim>
__device__ __forceinline__ void write_row(const AttentionArgs& a, const LaneRows& rows, int i, int g, int t,
                                          const float* totals, float total_l) {
  for (int j = 0; j < kDim / 8; ++j) {
    float2 v = make_float2(0.0f, 0.0f);
    if (totals != nullptr) {
      const float* total = totals + (g + 8 * i) * kDim + 8 * j + 2 * t;
      v = make_float2(total[0] / total_l, total[1] / total_l);
    }
    *reinterpret_cast<float2*>(a.out + rows.row[i] * a.ldo + rows.head[i] * kDim + 8 * j + 2 * t) = v;
  }
}
#endif

// Split mode, after the block wrote its partials: a row whose splits are all written merges
// them here, in the block that wrote the last one (a ticket per (row, KV head) counts them,
// and that block sets it back to zero), so no second kernel is launched. A row with one split
// wrote its output directly (finish_split) and takes no ticket. The merge is merge_splits's,
// so the bits are the same whichever block is last.
[[maybe_unused]] __device__ void merge_if_last(const AttentionArgs& a, int64_t t0, int tokens, int64_t kv_head,
                                               int kDim, bool* merging) {
  __threadfence();  // this thread's partials, visible to the block that merges them
  __syncthreads();
  for (int token = static_cast<int>(threadIdx.x); token < tokens; token += blockDim.x) {
    const int64_t row = t0 + token;
    bool last = false;
    if (row < a.batch.n_rows && a.batch.seq_ids[row] != kPaddingSeq) {
      const int64_t last_split = a.batch.positions[row] / kAttentionSplit;
      if (last_split > 0 && static_cast<int64_t>(blockIdx.z) <= last_split) {
        int32_t* ticket = a.tickets + row * a.shape.n_head_kv + kv_head;
        last = atomicAdd(ticket, 1) == last_split;
        if (last) *ticket = 0;  // every split of the row has arrived: none will add to it again
      }
    }
    merging[token] = last;
  }
  __syncthreads();
  __threadfence();  // the other blocks' partials are read after their tickets
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warps = static_cast<int>(blockDim.x / 32);
  for (int item = warp; item < tokens * a.group; item += warps) {
    const int token = item / a.group;
    if (!merging[token]) continue;
    const int64_t row = t0 + token;
    const int64_t head = kv_head * a.group + item % a.group;
    const float* first = a.partials + partial_offset(row, head, 0, a.shape.n_head, a.max_splits, kDim);
    float* out = a.out + row * a.ldo + head * kDim;
    const int64_t n_splits = a.batch.positions[row] / kAttentionSplit + 1;
    if (kDim == 64) {
      merge_partials<2>(first, kDim + 2, n_splits, kDim, lane, out);
    } else {
      merge_partials<4>(first, kDim + 2, n_splits, kDim, lane, out);
    }
  }
}

// blockIdx: x = window of 16 * kRowWarps / group rows, y = KV head, z = split (split-block
// mode). A block has kMaxWarps warps: all of them copy tiles (and merge, in split mode). In
// walk mode each warp owns 16 MMA rows. In split mode the block has one set of 16 (a decode
// step's group of heads; a window of more would walk its sequences one after another), which
// all warps share: each computes a quarter of a tile's scores (through shared memory to all)
// and a quarter of the output dims, with the MMAs a single warp would issue for them, so a
// row's floats are the walk's; a split block walks up to kAttentionSplit / kKvTile tiles of one
// sequence, so tile n + 1 is copied while tile n is computed (kStages 2). What comes from the
// host (positions, sequences, block tables) is read before the wait for the previous kernel,
// so the first tile's lookups overlap it.
// kSplit is a template argument (not a.partials != null alone) so that each kernel holds only
// its own mode's code: the registers are near the 255 a thread can have.
template <int kDim, bool kSplit>
__global__ void __launch_bounds__(32 * kMaxWarps) attention_mma_kernel(AttentionArgs a) {
#if !defined(GUFO_HIP)
  constexpr int kRowWarps = kSplit ? 1 : kMaxWarps;
  constexpr int kStages = kSplit ? 2 : 1;
  using T = Tiles<kDim>;
  // Warps that share one set of MMA rows, and the score and output n-tiles each computes.
  constexpr int kSharers = kSplit ? kMaxWarps : 1;
  constexpr int kOwnKeyTiles = T::kKeyTiles / kSharers;
  constexpr int kOwnDimTiles = T::kDimTiles / kSharers;
  static_assert(T::kKeyTiles % kSharers == 0 && T::kDimTiles % kSharers == 0, "the sharers split the tiles evenly");
  extern __shared__ __align__(16) unsigned char shared[];
  // kStages K and V tiles, then (walk mode) the warps' totals.
  constexpr int kStageHalves = 2 * kKvTile * T::kStride;
  const auto k_tile = [&](int stage) { return reinterpret_cast<__half*>(shared) + stage * kStageHalves; };
  const auto v_tile = [&](int stage) { return k_tile(stage) + kKvTile * T::kStride; };
  __shared__ Runs runs;
  __shared__ int64_t key_at[kStages][kKvTile];  // each stage's keys: element offset in the pool, -1 past the end
  __shared__ bool merging[16 * kMaxWarps];      // split mode: the window's tokens this block merges
  __shared__ __align__(16) float score_rows[kSplit ? 16 * kScoreStride : 1];  // split mode: a tile's scores

  const int lane = static_cast<int>(threadIdx.x % 32);
  const int warp = static_cast<int>(threadIdx.x / 32);
  const int g = lane / 4, t = lane % 4;
  const int tokens = 16 * kRowWarps / a.group;
  const int share = kSplit ? warp : 0;  // which quarter of the scores and dims (split mode)
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * tokens;
  const int64_t kv_head = blockIdx.y;
  constexpr bool split_mode = kSplit;
  const int64_t split_begin = split_mode ? blockIdx.z : 0;
  float* totals = reinterpret_cast<float*>(shared + kStages * kStageHalves * sizeof(__half)) + warp * 16 * kDim;

  LaneRows rows;
  for (int i = 0; i < 2; ++i) {
    const int r = 16 * (kSplit ? 0 : warp) + g + 8 * i;
    rows.token[i] = r / a.group;
    rows.row[i] = t0 + rows.token[i] < a.batch.n_rows ? t0 + rows.token[i] : -1;
    rows.head[i] = kv_head * a.group + r % a.group;
    rows.position[i] = rows.row[i] >= 0 ? a.batch.positions[rows.row[i]] : 0;
  }
  if (threadIdx.x == 0) find_runs(a.batch, t0, tokens, runs);
  __syncthreads();  // runs
  if (runs.count > 0) {
    const RunSpan span0 = run_span(runs, 0, split_begin, split_mode);
    if (span0.first < span0.end) locate_tile(a, runs.seq[0], kv_head, span0.first, span0.end, kDim, key_at[0]);
  }
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  uint32_t q_hi[T::kSteps][4], q_lo[T::kSteps][4];
  load_q<kDim>(a, rows, t, q_hi, q_lo);

  int stage = 0;  // the K/V buffers the next tile goes to
  for (int run = 0; run < runs.count; ++run) {
    const int32_t seq = runs.seq[run];
    bool in_run[2];
    for (int i = 0; i < 2; ++i) {
      in_run[i] = rows.row[i] >= 0 && rows.token[i] >= runs.first[run] && rows.token[i] < runs.end[run];
    }
    if (seq == kPaddingSeq) {
      for (int i = 0; i < 2; ++i) {
        if (in_run[i] && (!split_mode || (blockIdx.z == 0 && warp == 0))) {
          write_row<kDim>(a, rows, i, g, t, nullptr, 0.0f);
        }
      }
      continue;
    }
    // The run's tiles in this block's splits, in order; a split (kAttentionSplit, a multiple
    // of kKvTile) starts from a fresh state.
    const RunSpan span = run_span(runs, run, split_begin, split_mode);
    if (span.first >= span.end) continue;  // the same in every thread of the block
    float total_m[2] = {-INFINITY, -INFINITY}, total_l[2] = {0.0f, 0.0f};
    for (int j = 0; !split_mode && j < 2 * T::kDimTiles; ++j) {
      *reinterpret_cast<float2*>(totals + (g + 8 * (j % 2)) * kDim + 8 * (j / 2) + 2 * t) = make_float2(0.0f, 0.0f);
    }
    for (int64_t begin = span.first; begin < span.end; begin += kAttentionSplit) {
      const int64_t split = begin / kAttentionSplit;
      const int64_t end = min(span.end, begin + kAttentionSplit);
      float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
      float o[kOwnDimTiles][4];
#pragma unroll
      for (int j = 0; j < kOwnDimTiles; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
      if (run > 0 || begin > span.first) locate_tile(a, seq, kv_head, begin, end, kDim, key_at[stage]);
      copy_tile<kDim>(a, key_at[stage], k_tile(stage), v_tile(stage));
      for (int64_t tile0 = begin; tile0 < end; tile0 += kKvTile) {
        const int current = stage;
        const bool more = tile0 + kKvTile < end;
        if constexpr (kStages == 2) {
          stage ^= 1;
          if (more) {
            locate_tile(a, seq, kv_head, tile0 + kKvTile, end, kDim, key_at[stage]);
            copy_tile<kDim>(a, key_at[stage], k_tile(stage), v_tile(stage));
            copies_wait<1>();
          } else {
            copies_wait<0>();
          }
        } else {
          copies_wait<0>();
        }
        __syncthreads();  // every thread's copies of the current tile have landed
        float s[T::kKeyTiles][4];
        if constexpr (kSplit) {
          float own[kOwnKeyTiles][4];
          scores<kDim, kOwnKeyTiles>(q_hi, q_lo, k_tile(current), share * kOwnKeyTiles, g, t, own);
          store_scores(own, share * kOwnKeyTiles, g, t, score_rows);
          __syncthreads();  // every warp's scores
          load_scores(score_rows, g, t, s);
        } else {
          scores<kDim, T::kKeyTiles>(q_hi, q_lo, k_tile(current), 0, g, t, s);
        }
#pragma unroll
        for (int i = 0; i < 2; ++i) softmax_step(i, in_run[i], rows.position[i], tile0, t, s, m[i], l[i], o);
        add_weighted_values<kDim>(s, v_tile(current), share * kOwnDimTiles, lane, o);
        __syncthreads();  // the current tile's buffers (and split mode's scores) are free again
        if (kStages == 1 && more) {
          locate_tile(a, seq, kv_head, tile0 + kKvTile, end, kDim, key_at[stage]);
          copy_tile<kDim>(a, key_at[stage], k_tile(stage), v_tile(stage));
        }
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        if (!in_run[i] || split > rows.position[i] / kAttentionSplit) continue;  // no key of the row in it
        finish_split<kDim, kSplit>(a, rows, i, split, g, t, m[i], l[i], o, share * kOwnDimTiles, total_m[i], total_l[i],
                                   totals);
      }
    }
    for (int i = 0; i < 2; ++i) {
      if (in_run[i] && !split_mode) write_row<kDim>(a, rows, i, g, t, totals, total_l[i]);
    }
  }
  if constexpr (kSplit) merge_if_last(a, t0, tokens, kv_head, kDim, merging);
#else
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
#endif
}

template <int kDim, bool kSplit>
Status launch(const AttentionArgs& args, int64_t n_head_kv, const std::string& context, gpu::stream_t stream) {
  constexpr int kRowWarps = kSplit ? 1 : kMaxWarps;
  constexpr int kStages = kSplit ? 2 : 1;
  const size_t smem = kStages * 2 * kKvTile * (kDim + kPad) * sizeof(uint16_t) +
                      (kSplit ? 0 : static_cast<size_t>(kRowWarps) * 16 * kDim * sizeof(float));
  // NOTE(attention_mma): a prefill block (K and V tiles, four warps' totals) takes ~66 KiB of
  // shared memory, a decode block (two stages of tiles) ~70 KiB: past the 48 KiB a block gets
  // without asking.
  auto* kernel = attention_mma_kernel<kDim, kSplit>;
  GUFO_GPU_RETURN_IF_ERROR(gpu::set_max_dynamic_shared(kernel, static_cast<int>(smem)), context);
  const int64_t tokens = 16 * kRowWarps / args.group;
  const dim3 grid(static_cast<unsigned>((args.batch.n_rows + tokens - 1) / tokens), static_cast<unsigned>(n_head_kv),
                  static_cast<unsigned>(kSplit ? args.max_splits : 1));
  (void)gpu::launch(kernel, grid, 32 * kMaxWarps, smem, stream, args);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  return {};
}

}  // namespace

bool attention_mma_supports(const KvLayer& kv, const AttentionShape& shape) {
  if (!kv.f16 || (shape.head_dim != 64 && shape.head_dim != 128) || !current_device_has_mma()) return false;
  if (shape.n_head_kv < 1 || shape.n_head % shape.n_head_kv != 0) return false;
  const int64_t group = shape.n_head / shape.n_head_kv;
  return group <= 16 && 16 % group == 0;
}

Status attention_mma(const KvLayer& kv, const BatchRows& batch, const AttentionShape& shape, const float* q,
                     int64_t ldq, int64_t max_splits, float* partials, int32_t* tickets, float* out, int64_t ldo,
                     gpu::stream_t stream) {
  const std::string context = "attention_mma(rows=" + std::to_string(batch.n_rows) +
                              ", heads=" + std::to_string(shape.n_head) + "/" + std::to_string(shape.n_head_kv) + "x" +
                              std::to_string(shape.head_dim) + ")";
  if (!attention_mma_supports(kv, shape)) return Error{context + ": unsupported layout", ErrorKind::Unsupported};
  if (partials != nullptr && tickets == nullptr) return Error{context + ": split blocks without tickets"};
  const AttentionArgs args{kv,
                           batch,
                           shape,
                           q,
                           ldq,
                           out,
                           ldo,
                           partials,
                           max_splits,
                           tickets,
                           static_cast<int>(shape.n_head / shape.n_head_kv)};
  const bool split_mode = partials != nullptr;
  if (shape.head_dim == 64) {
    return split_mode ? launch<64, true>(args, shape.n_head_kv, context, stream)
                      : launch<64, false>(args, shape.n_head_kv, context, stream);
  }
  return split_mode ? launch<128, true>(args, shape.n_head_kv, context, stream)
                    : launch<128, false>(args, shape.n_head_kv, context, stream);
}

}  // namespace gufo::cuda
