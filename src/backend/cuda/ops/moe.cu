// Mixture-of-experts routing and combine (see ops.h). CPU reference: backend/cpu/ops/moe.cpp
// (route_token and the ascending-expert sum of moe_ffn). The expert FFNs themselves are
// mat_mul_q / swiglu in expert mode (backend/cuda/cuda_backend.cpp).
// Tested by tests/ops/moe_test.cpp.
#include <climits>
#include <string>

#include "backend/cuda/alignment.h"
#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {
namespace {

constexpr int kMaxExperts = 512;
constexpr int kMaxUsed = 32;

constexpr int kRouteGroups = 4;  // tokens per block of route_kernel
constexpr int kPerLane = kMaxExperts / gpu::group_lanes;

// (value, index) pairs: the larger value wins, ties to the lower index; NaN never wins.
__device__ inline bool better(float value, int index, float best, int best_index) {
  return value > best || (value == best && index < best_index);
}

// The lowest expert whose bit is clear in no lane's `taken` (bit k of lane l: expert l + 32k).
__device__ inline int first_unused(uint32_t taken, int n_expert) {
  for (int e = 0; e < n_expert; ++e) {
    const uint32_t bits = static_cast<uint32_t>(gpu::shfl(static_cast<int>(taken), e % gpu::group_lanes));
    if (!(bits >> (e / gpu::group_lanes) & 1u)) return e;
  }
  return 0;
}

// A lane group per token, lane l holding experts l, l + 32, ... in registers, in the CPU's
// operations (route_token): max (order-free), exp, the sum in expert order (lane 0, over the
// shared copy), divide; then n_used rounds of "most probable unused expert, ties to the lower
// index" as a group reduction (a total order: any reduction order picks the same expert),
// then renormalize by the chosen weights summed in slot order. expf here and std::exp on the
// CPU may differ by an ulp, so the weights agree to an ulp and two experts within an ulp of
// each other may be chosen differently (the kernel before this one had the same exp). (Where
// some probabilities are
// NaN, the CPU's scan may keep a NaN expert that this reduction passes over; both choose an
// unused expert, and such a model's output is lost either way.)
// NOTE(moe): one thread per token walked 128 experts 8 times through local memory, and its
// choices through global memory: 344 us per decode layer of Qwen3-30B-A3B on an H100.
__global__ void __launch_bounds__(kRouteGroups * gpu::group_lanes) route_kernel(const float* logits, int64_t n_rows,
                                                                                int n_expert, int n_used,
                                                                                bool normalize, MoeRouting r) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int group = static_cast<int>(threadIdx.x / gpu::group_lanes);
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRouteGroups + group;
  if (row >= n_rows) return;  // the whole group; only group-wide shuffles follow
  const float* l = logits + row * n_expert;
  float max = l[0];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int e = lane + k * gpu::group_lanes;
    if (e < n_expert) max = fmaxf(max, l[e]);
  }
  max = gpu::group_max(max);
  float p[kPerLane];
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    const int e = lane + k * gpu::group_lanes;
    p[k] = e < n_expert ? expf(l[e] - max) : 0.0f;
  }
  // The sum in expert order: every value passes to lane 0, one by one.
  float sum = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) {
    for (int j = 0; j < gpu::group_lanes && k * gpu::group_lanes + j < n_expert; ++j) {
      const float v = gpu::shfl(p[k], j);
      if (lane == 0) sum += v;
    }
  }
  sum = gpu::shfl(sum, 0);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) p[k] /= sum;
  uint32_t taken = 0;  // bit k: expert lane + 32k is chosen
  float chosen_sum = 0.0f;
  int32_t* experts = r.choice_expert + row * n_used;
  float* weights = r.choice_weight + row * n_used;
  for (int slot = 0; slot < n_used; ++slot) {
    float best = -INFINITY;
    int best_index = INT_MAX;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int e = lane + k * gpu::group_lanes;
      if (e < n_expert && !(taken >> k & 1u) && better(p[k], e, best, best_index)) {
        best = p[k];
        best_index = e;
      }
    }
    for (int mask = gpu::group_lanes / 2; mask > 0; mask /= 2) {
      const float other = gpu::shfl_xor(best, mask);
      const int other_index = gpu::shfl_xor(best_index, mask);
      if (better(other, other_index, best, best_index)) {
        best = other;
        best_index = other_index;
      }
    }
    // No number left (NaN probabilities): the CPU's scan keeps the first unused expert.
    if (best_index == INT_MAX) {
      best_index = first_unused(taken, n_expert);
      best = NAN;
    }
    if (best_index % gpu::group_lanes == lane) taken |= 1u << (best_index / gpu::group_lanes);
    if (lane == 0) {
      experts[slot] = best_index;
      weights[slot] = best;
      chosen_sum += best;
    }
  }
  if (normalize && lane == 0) {
    for (int slot = 0; slot < n_used; ++slot) weights[slot] /= chosen_sum;
  }
}

// One block: expert e's slots are the tokens routed to it, ascending; each token's slots are
// then listed by ascending expert for the combine; the experts with slots are listed for the
// matmuls' grids (ExpertRows::active).
// NOTE(moe): the running sum of the counts goes through shared memory: thread 0 walking the
// experts' global counters one dependent access at a time cost a decode step ~100 us.
__global__ void plan_kernel(int64_t n_rows, int n_expert, int n_used, MoeRouting r) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  __shared__ int32_t offsets[kMaxExperts + 1];
  const int64_t n_choices = n_rows * n_used;
  for (int e = static_cast<int>(threadIdx.x); e < n_expert; e += blockDim.x) {
    int count = 0;
    for (int64_t i = 0; i < n_choices; ++i) count += r.choice_expert[i] == e;
    offsets[e + 1] = count;
  }
  __syncthreads();
  __shared__ int32_t active[kMaxExperts];
  __shared__ int n_active;
  if (threadIdx.x == 0) {
    offsets[0] = 0;
    n_active = 0;
    for (int e = 0; e < n_expert; ++e) {
      if (offsets[e + 1] > 0) active[n_active++] = e;
      offsets[e + 1] += offsets[e];
    }
  }
  __syncthreads();
  for (int e = static_cast<int>(threadIdx.x); e <= n_expert; e += blockDim.x) r.offsets[e] = offsets[e];
  const int64_t choices = n_rows * n_used;  // moe_grid_experts, on the device
  const auto grid = static_cast<int>(choices < n_expert ? choices : n_expert);
  for (int k = static_cast<int>(threadIdx.x); k < grid; k += blockDim.x) r.active[k] = k < n_active ? active[k] : -1;
  __syncthreads();
  // row_slots first holds each choice's slot, in choice order.
  for (int e = static_cast<int>(threadIdx.x); e < n_expert; e += blockDim.x) {
    int next = r.offsets[e];
    for (int64_t i = 0; i < n_choices; ++i) {
      if (r.choice_expert[i] != e) continue;
      r.slot_rows[next] = static_cast<int32_t>(i / n_used);
      r.row_slots[i] = next++;
    }
  }
  __syncthreads();
  for (int64_t row = threadIdx.x; row < n_rows; row += blockDim.x) {
    int32_t expert[kMaxUsed], slot[kMaxUsed];
    float weight[kMaxUsed];
    for (int j = 0; j < n_used; ++j) {
      expert[j] = r.choice_expert[row * n_used + j];
      slot[j] = r.row_slots[row * n_used + j];
      weight[j] = r.choice_weight[row * n_used + j];
    }
    for (int j = 1; j < n_used; ++j) {  // insertion sort by expert (experts are distinct)
      for (int i = j; i > 0 && expert[i - 1] > expert[i]; --i) {
        const int32_t te = expert[i], ts = slot[i];
        const float tw = weight[i];
        expert[i] = expert[i - 1], slot[i] = slot[i - 1], weight[i] = weight[i - 1];
        expert[i - 1] = te, slot[i - 1] = ts, weight[i - 1] = tw;
      }
    }
    for (int j = 0; j < n_used; ++j) {
      r.row_slots[row * n_used + j] = slot[j];
      r.row_weights[row * n_used + j] = weight[j];
    }
  }
}

__global__ void combine_kernel(const float* y, int64_t cols, MoeRouting r, int n_used, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  const int64_t row = blockIdx.x;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    float acc = 0.0f;
    for (int j = 0; j < n_used; ++j) {
      const int64_t slot = r.row_slots[row * n_used + j];
      acc = acc + r.row_weights[row * n_used + j] * y[slot * cols + c];
    }
    out[row * cols + c] = acc;
  }
}

}  // namespace

size_t moe_routing_bytes(int64_t n_rows, int64_t n_expert, int64_t n_used) {
  const auto choices = static_cast<size_t>(n_rows * n_used);
  return 2 * aligned_bytes(choices * 4) + aligned_bytes(static_cast<size_t>(n_expert + 1) * 4) + 3 * aligned_bytes(choices * 4) +
         aligned_bytes(static_cast<size_t>(n_expert) * 4);
}

MoeRouting moe_routing_at(void* memory, int64_t n_rows, int64_t n_expert, int64_t n_used) {
  auto* base = static_cast<std::byte*>(memory);
  const auto choices = static_cast<size_t>(n_rows * n_used);
  const auto take = [&](size_t bytes) {
    std::byte* p = base;
    base += aligned_bytes(bytes);
    return p;
  };
  MoeRouting r;
  r.choice_expert = reinterpret_cast<int32_t*>(take(choices * 4));
  r.choice_weight = reinterpret_cast<float*>(take(choices * 4));
  r.offsets = reinterpret_cast<int32_t*>(take(static_cast<size_t>(n_expert + 1) * 4));
  r.slot_rows = reinterpret_cast<int32_t*>(take(choices * 4));
  r.row_slots = reinterpret_cast<int32_t*>(take(choices * 4));
  r.row_weights = reinterpret_cast<float*>(take(choices * 4));
  r.active = reinterpret_cast<int32_t*>(take(static_cast<size_t>(n_expert) * 4));
  return r;
}

bool moe_supports(int64_t n_expert, int64_t n_used) {
  return n_expert >= 1 && n_expert <= kMaxExperts && n_used >= 1 && n_used <= n_expert && n_used <= kMaxUsed;
}

Status moe_route(const float* logits, int64_t n_rows, int64_t n_expert, int64_t n_used, bool normalize,
                 const MoeRouting& routing, gpu::stream_t stream) {
  const std::string context = "moe_route(rows=" + std::to_string(n_rows) + ", " + std::to_string(n_used) + " of " +
                              std::to_string(n_expert) + " experts)";
  if (!moe_supports(n_expert, n_used)) {
    return Error{context + ": the CUDA backend routes up to " + std::to_string(kMaxUsed) + " of " +
                     std::to_string(kMaxExperts) + " experts",
                 ErrorKind::Unsupported};
  }
  if (n_rows == 0) return {};
  (void)gpu::launch(route_kernel, static_cast<unsigned>((n_rows + kRouteGroups - 1) / kRouteGroups),
                    kRouteGroups * gpu::group_lanes, 0, stream, logits, n_rows, static_cast<int>(n_expert),
                    static_cast<int>(n_used), normalize, routing);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  (void)gpu::launch(plan_kernel, 1, 256, 0, stream, n_rows, static_cast<int>(n_expert), static_cast<int>(n_used),
                    routing);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context + " plan");
  return {};
}

Status moe_combine(const float* y, int64_t cols, const MoeRouting& routing, int64_t n_rows, int64_t n_used,
                   float* out, gpu::stream_t stream) {
  if (n_rows == 0) return {};
  (void)gpu::launch(combine_kernel, static_cast<unsigned>(n_rows), 256, 0, stream, y, cols, routing,
                    static_cast<int>(n_used), out);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "moe_combine(rows=" + std::to_string(n_rows) + ")");
  return {};
}

}  // namespace gufo::cuda
