// Integer matmul for prefill-sized batches (more than 32 activation rows), with the numbers of
// mat_mul_q.cu: the CPU's accumulation order (exact integer sums per super-block, then the
// float chain over the super-blocks in order), so bit for bit the CPU's result in any batch.
// What differs is where the operands come from. mat_mul_q.cu's tiles read their MMA fragments
// straight from global memory, 4 bytes a lane, and were bound by those loads (~43 TOPS of int8
// on the H200). Here a block of 8 warps stages each super-block's weight rows (their bytes as
// they lie in device memory) and activation rows in shared memory with cp.async, two more
// super-blocks' copies in flight while the warps compute on this one (one barrier a step),
// and every fragment, scale and activation sum is read from there.
// Block: 128 weight rows x 64 activation rows; warp (wm, wn) computes 32 x 32 of it as 2 x 4
// MMA tiles of 16 x 8. Shared rows are padded to an odd multiple of 16 bytes (4, 12, 20 or 28
// words mod 32), so the 8 rows x 4 words of a fragment load fall in 32 distinct banks.
// The K-quants' mins term (sum over 8 sub-blocks of min x the activations' 32-sum) is two more
// small MMAs a tile, on the sums split in bytes by the quantizer, where it was 8 multiply-adds
// an element (and their operands' registers): 8B prefill 1.21x on an H100 (BENCHMARKS.md).
// Tried and measured slower (session 24): folding each sub-block's scale into the weights in
// 3-bit parts (two u8 x s8 MMAs a tile, no multiply-add an element), -6% on the 8B: with two
// warps a scheduler the doubled MMAs throttle the tensor pipe more than the multiply-adds cost.
// Tested by tests/ops/mat_mul_test.cpp (against the CPU, bit for bit, batches past 32 rows).
#include <string>

#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/async_copy.cuh"
#include "backend/cuda/ops/expert_block.cuh"
#include "backend/cuda/ops/mat_vec_q.cuh"
#include "backend/cuda/ops/mma_s8.cuh"
#include "backend/cuda/quant_traits.cuh"

namespace gufo::cuda {

#if !defined(GUFO_HIP)
namespace {

constexpr int kBM = 128;  // weight rows per block
constexpr int kBN = 64;   // activation rows per block
constexpr int kWarpsM = 4;
constexpr int kWarpsN = 2;
constexpr int kRm = 2;  // 16-row MMA tiles per warp
constexpr int kTn = 4;  // 8-row activation tiles per warp
// Super-blocks staged in shared memory at once: three where a block may have them (Hopper and
// the A100: 227 and 163 KiB), two on GPUs that allow a block 99 KiB (sm_86, sm_89, sm_120).
constexpr int kMostStages = 3;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kElems = kRm * kTn * 4;
static_assert(kWarpsM * kRm * 16 == kBM && kWarpsN * kTn * 8 == kBN);

constexpr int padded(int bytes) { return bytes % 32 == 16 ? bytes : bytes + 16; }

// One stage in shared memory: weight rows [kBM][kWStride] (a super-block's bytes each),
// activation rows [kBN][kXStride] (a super-block's quants), their scales [kBN] and, for
// types with mins, their 32-sums split in bytes [kBN][16] (ops.h, QuantActs::sum_parts).
template <class T>
struct Stage {
  static_assert(T::kBlockBytes % 16 == 0 && T::kSuperBlock % 16 == 0);
  static constexpr int kWStride = padded(T::kBlockBytes);
  static constexpr int kXStride = padded(T::kSuperBlock);
  static constexpr int kW = 0;
  static constexpr int kX = kW + kBM * kWStride;
  static constexpr int kDx = kX + kBN * kXStride;
  static constexpr int kParts = kDx + kBN * 4;
  static constexpr int kBytes = kParts + (T::kMins ? kBN * 16 : 0);
};

struct Frame {
  int64_t x_begin, x_end;  // the activation rows of this block's expert (all rows in plain mode)
  int64_t n_rows;          // weight rows of one expert (all rows in plain mode)
  int64_t w_offset;        // the expert's first weight row
  int64_t row0, tok0;      // this block's first weight row and activation row
};

__device__ inline int64_t x_row(const QuantMatMulArgs& a, const Frame& f, int64_t tok) {
  const int64_t j = tok < f.x_end ? tok : f.x_end - 1;
  return a.experts.x_rows != nullptr ? static_cast<int64_t>(a.experts.x_rows[j]) : j;
}

__device__ inline int64_t weight_row_of(const Frame& f, int64_t local) {
  const int64_t r = f.row0 + local;
  return f.w_offset + (r < f.n_rows ? r : f.n_rows - 1);
}

// Where one thread's copies of every stage come from and go to, worked out once a block (a
// stage's sources are these plus the super-block's offset). Piece i of a stage (16 bytes) is
// thread i % kThreads's, so each copy instruction of a warp reads 512 contiguous bytes of a
// row or two (a warp's own rows read 16 bytes a row per instruction twice the L2 requests, and
// stalled on them: ncu, session 24). Rows past the end repeat the last one.
template <class T>
struct CopyPlan {
  static constexpr int kWRowPieces = T::kBlockBytes / 16;
  static constexpr int kWSteps = (kBM * kWRowPieces + kThreads - 1) / kThreads;
  static constexpr int kXRowPieces = T::kSuperBlock / 16;
  static constexpr int kXSteps = (kBN * kXRowPieces + kThreads - 1) / kThreads;
  static constexpr uint32_t kNone = ~0u;  // no piece at this step
  const std::byte* w_base;                // the block's first weight row
  uint32_t w_src[kWSteps];                // bytes from w_base, in super-block 0
  uint32_t w_dst[kWSteps];                // bytes into a stage, or kNone
  uint32_t x_src[kXSteps];                // bytes from the activations' quants, in super-block 0
  uint32_t x_dst[kXSteps];                // bytes into a stage, or kNone
  int64_t own_row;                        // threads below kBN: the activation row of token tid
};

template <class T>
__device__ CopyPlan<T> copy_plan(const QuantMatMulArgs& a, const Frame& f) {
  using S = Stage<T>;
  using P = CopyPlan<T>;
  const int tid = static_cast<int>(threadIdx.x);
  P p;
  const int64_t first_row = weight_row_of(f, 0);
  p.w_base = weight_row(a.w, first_row);
#pragma unroll
  for (int j = 0; j < P::kWSteps; ++j) {
    const int i = tid + j * kThreads, r = i / P::kWRowPieces, piece = i % P::kWRowPieces;
    const bool used = i < kBM * P::kWRowPieces;
    p.w_src[j] = static_cast<uint32_t>((weight_row_of(f, used ? r : 0) - first_row) * a.w.q_row_bytes + piece * 16);
    p.w_dst[j] = used ? static_cast<uint32_t>(S::kW + r * S::kWStride + piece * 16) : P::kNone;
  }
#pragma unroll
  for (int j = 0; j < P::kXSteps; ++j) {
    const int i = tid + j * kThreads, r = i / P::kXRowPieces, piece = i % P::kXRowPieces;
    const bool used = i < kBN * P::kXRowPieces;
    p.x_src[j] = static_cast<uint32_t>(x_row(a, f, f.tok0 + (used ? r : 0)) * a.x.k + piece * 16);
    p.x_dst[j] = used ? static_cast<uint32_t>(S::kX + r * S::kXStride + piece * 16) : P::kNone;
  }
  p.own_row = x_row(a, f, f.tok0 + min(tid, kBN - 1));
  return p;
}

// Issues the copies of super-block sb into `stage`.
template <class T>
__device__ void stage_copies(const QuantMatMulArgs& a, const CopyPlan<T>& p, int sb, unsigned char* stage) {
  using S = Stage<T>;
  using P = CopyPlan<T>;
  const int tid = static_cast<int>(threadIdx.x);
  const std::byte* w = p.w_base + static_cast<int64_t>(sb) * T::kBlockBytes;
#pragma unroll
  for (int j = 0; j < P::kWSteps; ++j) {
    if (p.w_dst[j] != P::kNone) copy16_async(stage + p.w_dst[j], w + p.w_src[j]);
  }
  const int8_t* x = a.x.qs + static_cast<int64_t>(sb) * T::kSuperBlock;
#pragma unroll
  for (int j = 0; j < P::kXSteps; ++j) {
    if (p.x_dst[j] != P::kNone) copy16_async(stage + p.x_dst[j], x + p.x_src[j]);
  }
  if (tid < kBN) {
    copy4_async(stage + S::kDx + tid * 4, a.x.d + p.own_row * (a.x.k / T::kSuperBlock) + sb);
    if constexpr (T::kMins)
      copy16_async(stage + S::kParts + tid * 16, a.x.sum_parts + p.own_row * (a.x.k / 16) + sb * 16);
  }
  copies_commit();
}

// The mins' sums M = sum over the 8 sub-blocks of min * 32-sum, exact, of one 16 x 8 tile as
// two MMAs (k = 16, the 8 sub-blocks in k 0-7, zeros above): the mins (6 bits, a RowBlock's two
// words; a0 row g, a1 row g + 8) by the sums' low 7 bits, then by their rest: M = low + 128 rest.
__device__ inline void mins_tile(uint32_t a0, uint32_t a1, uint32_t low, uint32_t rest, int (&m)[4]) {
  int lo[4], hi[4];
  mma_k16(lo, a0, a1, low);
  mma_k16(hi, a0, a1, rest);
#pragma unroll
  for (int i = 0; i < 4; ++i) m[i] = lo[i] + hi[i] * 128;
}

// The integer sums of super-block sb for the lane's elements, then one chain step each.
template <class T>
__device__ void compute_stage(const QuantMatMulArgs& a, const Frame& f, int64_t sb, const unsigned char* stage,
                              float (&acc)[kElems]) {
  using S = Stage<T>;
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int wm = warp % kWarpsM, wn = warp / kWarpsM;
  const int g = lane / 4, t = lane % 4;
  const auto* w_tile = reinterpret_cast<const std::byte*>(stage + S::kW);
  const unsigned char* x_tile = stage + S::kX;
  const std::byte* rows[kRm][2];
  typename T::RowBlock rb[kRm][2];
#pragma unroll
  for (int rm = 0; rm < kRm; ++rm) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int local = wm * 32 + rm * 16 + g + 8 * h;
      rows[rm][h] = w_tile + local * S::kWStride;
      rb[rm][h] = T::row_block_at(rows[rm][h], a.w, weight_row_of(f, local), sb);
    }
  }
  int s[kElems];
#pragma unroll
  for (int e = 0; e < kElems; ++e) s[e] = 0;
#pragma unroll
  for (int c = 0; c < T::kChunks; ++c) {
    uint32_t af[kRm][4];
#pragma unroll
    for (int rm = 0; rm < kRm; ++rm) {
      af[rm][0] = T::quad_at(rows[rm][0], c, 4 * t);
      af[rm][1] = T::quad_at(rows[rm][1], c, 4 * t);
      af[rm][2] = T::quad_at(rows[rm][0], c, 16 + 4 * t);
      af[rm][3] = T::quad_at(rows[rm][1], c, 16 + 4 * t);
    }
    uint32_t bf[kTn][2];
#pragma unroll
    for (int tn = 0; tn < kTn; ++tn) {
      const unsigned char* xr = x_tile + (wn * 32 + tn * 8 + g) * S::kXStride + c * 32;
      bf[tn][0] = *reinterpret_cast<const uint32_t*>(xr + 4 * t);
      bf[tn][1] = *reinterpret_cast<const uint32_t*>(xr + 16 + 4 * t);
    }
    add_scaled_products<T, kRm, kTn>(af, bf, rb, c, s);
  }
  // The lane's operands of mins_tile: k = 4t..4t+3 is past the 8 sub-blocks for t >= 2.
  const uint32_t used = T::kMins && t < 2 ? ~0u : 0u;
  const int word = t & 1;
  const auto* dx = reinterpret_cast<const float*>(stage + S::kDx);
#pragma unroll
  for (int tn = 0; tn < kTn; ++tn) {
    uint32_t low = 0, rest = 0;
    if constexpr (T::kMins) {
      const unsigned char* p = stage + S::kParts + (wn * 32 + tn * 8 + g) * 16 + 4 * word;
      low = *reinterpret_cast<const uint32_t*>(p) & used;
      rest = *reinterpret_cast<const uint32_t*>(p + 8) & used;
    }
#pragma unroll
    for (int rm = 0; rm < kRm; ++rm) {
      int m[4] = {};
      if constexpr (T::kMins) {
        mins_tile((word != 0 ? rb[rm][0].mn[1] : rb[rm][0].mn[0]) & used,
                  (word != 0 ? rb[rm][1].mn[1] : rb[rm][1].mn[0]) & used, low, rest, m);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int e = (rm * kTn + tn) * 4 + i;
        const int token = wn * 32 + tn * 8 + 2 * t + i % 2;
        acc[e] = chain_block<T>(acc[e], rb[rm][i / 2].d, rb[rm][i / 2].dmin, dx[token], s[e], m[i]);
      }
    }
  }
}

// blockIdx: x = weight rows / kBM, y = activation rows / kBN, z = expert (expert mode).
template <class T, int kStages>
__global__ void __launch_bounds__(kThreads) staged_kernel(QuantMatMulArgs a) {
  static_assert(kStages >= 2);
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  extern __shared__ __align__(16) unsigned char smem[];
  Frame f{0, a.x.rows, a.w.rows, 0, 0, 0};
  if (a.experts.offsets != nullptr) {
    const int e = block_expert(a.experts);
    if (e < 0) return;  // the whole block: no barrier is skipped by part of it
    f.x_begin = a.experts.offsets[e];
    f.x_end = a.experts.offsets[e + 1];
    f.n_rows = a.w.rows_per_expert;
    f.w_offset = static_cast<int64_t>(e) * a.w.rows_per_expert;
  }
  f.row0 = static_cast<int64_t>(blockIdx.x) * kBM;
  f.tok0 = f.x_begin + static_cast<int64_t>(blockIdx.y) * kBN;
  if (f.tok0 >= f.x_end) return;  // the whole block: no barrier is skipped by part of it
  const int n_sb = static_cast<int>(a.x.k / T::kSuperBlock);
  float acc[kElems];
#pragma unroll
  for (int e = 0; e < kElems; ++e) acc[e] = 0.0f;
  // kStages - 1 super-blocks in flight ahead of the one computed on; each step's copies go to
  // the stage read in the step before, which every warp has left once it passes the barrier.
  const CopyPlan<T> plan = copy_plan<T>(a, f);
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i) {
    if (i < n_sb) {
      stage_copies<T>(a, plan, i, smem + i * Stage<T>::kBytes);
    } else {
      copies_commit();  // an empty group keeps the count of groups in flight the same
    }
  }
  int slot = 0;  // sb's stage; sb + kStages - 1 goes to the one before it
  for (int sb = 0; sb < n_sb; ++sb) {
    copies_wait<kStages - 2>();
    __syncthreads();
    if (sb + kStages - 1 < n_sb) {
      const int ahead_slot = slot == 0 ? kStages - 1 : slot - 1;
      stage_copies<T>(a, plan, sb + kStages - 1, smem + ahead_slot * Stage<T>::kBytes);
    } else {
      copies_commit();
    }
    compute_stage<T>(a, f, sb, smem + slot * Stage<T>::kBytes, acc);
    slot = slot + 1 == kStages ? 0 : slot + 1;
  }
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  const int wm = warp % kWarpsM, wn = warp / kWarpsM;
  const int g = lane / 4, t = lane % 4;
  for_each_element<kRm, kTn>([&](int rm, int tn, int i, int e) {
    const int64_t r = f.row0 + wm * 32 + rm * 16 + g + 8 * (i / 2);
    const int64_t tok = f.tok0 + wn * 32 + tn * 8 + 2 * t + i % 2;
    if (r < f.n_rows && tok < f.x_end) a.out[tok * a.ldo + r] = acc[e];
  });
}

template <class T, int kStages>
Status launch_stages(const QuantMatMulArgs& a, int64_t n_rows, int64_t n_tokens, int64_t n_expert,
                     gpu::stream_t stream) {
  constexpr int kSmem = kStages * Stage<T>::kBytes;
  auto* kernel = staged_kernel<T, kStages>;
  GUFO_GPU_RETURN_IF_ERROR(gpu::set_max_dynamic_shared(kernel, kSmem), "mat_mul_q_staged: shared memory");
  const dim3 grid(static_cast<unsigned>((n_rows + kBM - 1) / kBM), static_cast<unsigned>((n_tokens + kBN - 1) / kBN),
                  static_cast<unsigned>(n_expert));
  (void)gpu::launch(kernel, grid, kThreads, kSmem, stream, a);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "mat_mul_q_staged");
  return {};
}

template <class T>
Status launch(const QuantMatMulArgs& a, int64_t n_rows, int64_t n_tokens, int64_t n_expert, gpu::stream_t stream) {
  // CopyPlan holds activation offsets in 32 bits: 4 GiB of quantized activations, some 350,000
  // rows of 12,288, is far past any batch the engine makes.
  if (a.x.rows * a.x.k >= (int64_t{1} << 32)) {
    return Error{"mat_mul_q_staged: " + std::to_string(a.x.rows) + " activation rows of " + std::to_string(a.x.k) +
                     " exceed 4 GiB",
                 ErrorKind::Unsupported};
  }
  const int optin = current_device_shared_optin();
  if (optin >= kMostStages * Stage<T>::kBytes)
    return launch_stages<T, kMostStages>(a, n_rows, n_tokens, n_expert, stream);
  if (optin >= 2 * Stage<T>::kBytes) return launch_stages<T, 2>(a, n_rows, n_tokens, n_expert, stream);
  return Error{"mat_mul_q_staged: needs " + std::to_string(2 * Stage<T>::kBytes) +
                   " bytes of shared memory per block, the device allows " + std::to_string(optin),
               ErrorKind::Unsupported};
}

}  // namespace

Status mat_mul_q_staged(const QuantMatMulArgs& args, int64_t n_tokens, gpu::stream_t stream) {
  const bool experts = args.experts.offsets != nullptr;
  const int64_t n_rows = experts ? args.w.rows_per_expert : args.w.rows;
  const int64_t n_expert = experts ? expert_grid(args.experts) : 1;
  switch (args.w.type) {
    case DType::Q8_0:
      return launch<TraitsQ8_0>(args, n_rows, n_tokens, n_expert, stream);
    case DType::Q4_K:
      return launch<TraitsQ4K>(args, n_rows, n_tokens, n_expert, stream);
    case DType::Q5_K:
      return launch<TraitsQ5K>(args, n_rows, n_tokens, n_expert, stream);
    case DType::Q6_K:
      return launch<TraitsQ6K>(args, n_rows, n_tokens, n_expert, stream);
    default:
      return Error{"mat_mul_q_staged: not a quantized type"};
  }
}
#else
Status mat_mul_q_staged(const QuantMatMulArgs&, int64_t, gpu::stream_t) {
  return Error{"mat_mul_q_staged: CUDA only", ErrorKind::Unsupported};
}
#endif

}  // namespace gufo::cuda
