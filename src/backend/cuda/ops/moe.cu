// Mixture-of-experts routing and combine (see ops.h). CPU reference: backend/cpu/ops/moe.cpp
// (route_token and the ascending-expert sum of moe_ffn). The expert FFNs themselves are
// mat_mul_q / swiglu in expert mode (backend/cuda/cuda_backend_nodes.cpp, run_moe).
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
// index" as a group reduction (a total order: any reduction order picks the same expert, and
// every lane ends with it), then renormalize by the chosen weights summed in slot order. expf
// here and std::exp on the CPU may differ by an ulp, so the weights agree to an ulp and two
// experts within an ulp of each other may be chosen differently. (Where some probabilities
// are NaN, the CPU's scan may keep a NaN expert that this reduction passes over; both choose
// an unused expert, and such a model's output is lost either way.) `probs`: the group's
// kMaxExperts floats of shared memory.
// NOTE(moe): one thread per token walked 128 experts 8 times through local memory, and its
// choices through global memory: 344 us per decode layer of Qwen3-30B-A3B on an H100.
__device__ void route_row(const float* logits, int64_t row, int n_expert, int n_used, bool normalize,
                          const MoeRouting& r, float* probs) {
  const int lane = static_cast<int>(threadIdx.x % gpu::group_lanes);
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
    if (e < n_expert) probs[e] = p[k];
  }
  gpu::sync_group();
  float sum = 0.0f;  // in expert order
  if (lane == 0) {
    for (int e = 0; e < n_expert; ++e) sum += probs[e];
  }
  sum = gpu::shfl(sum, 0);
#pragma unroll
  for (int k = 0; k < kPerLane; ++k) p[k] /= sum;
  uint32_t taken = 0;  // bit k: expert lane + 32k is chosen
  float chosen_sum = 0.0f;
  int my_expert = 0;  // lane j < n_used: slot j's
  float my_weight = 0.0f;
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
    if (lane == slot) {
      my_expert = best_index;
      my_weight = best;
    }
    chosen_sum += best;
  }
  if (lane < n_used) {
    r.choice_expert[row * n_used + lane] = my_expert;
    r.choice_weight[row * n_used + lane] = normalize ? my_weight / chosen_sum : my_weight;
  }
}

__global__ void __launch_bounds__(kRouteGroups* gpu::group_lanes)
    route_kernel(const float* logits, int64_t n_rows, int n_expert, int n_used, bool normalize, MoeRouting r) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  __shared__ float probs[kRouteGroups][kMaxExperts];
  const int group = static_cast<int>(threadIdx.x / gpu::group_lanes);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kRouteGroups + group;
  if (row < n_rows) route_row(logits, row, n_expert, n_used, normalize, r, probs[group]);
}

// By one block (a lane group at least): expert e's slots are the tokens routed to it,
// ascending; each token's slots are then listed by ascending expert for the combine; the
// experts with slots are listed for the matmuls' grids (ExpertRows::active). Counts and their
// running sums are integers: any order gives the same.
// NOTE(moe): the running sums are a lane group's scan: thread 0 walking the experts one
// dependent access at a time cost a decode step ~100 us through global memory, and still
// ~4 us through shared memory.
__device__ void plan_routes(int64_t n_rows, int n_expert, int n_used, const MoeRouting& r) {
  __shared__ int32_t counts[kMaxExperts];
  __shared__ int32_t offsets[kMaxExperts + 1];
  __shared__ int32_t active[kMaxExperts];
  __shared__ int n_active;
  const int tid = static_cast<int>(threadIdx.x);
  const int64_t n_choices = n_rows * n_used;
  for (int e = tid; e < n_expert; e += blockDim.x) counts[e] = 0;
  __syncthreads();
  for (int64_t i = tid; i < n_choices; i += blockDim.x) atomicAdd(&counts[r.choice_expert[i]], 1);
  __syncthreads();
  if (tid < gpu::group_lanes) {
    const int lane = tid;
    const int per = (n_expert + gpu::group_lanes - 1) / gpu::group_lanes;
    const int e0 = lane * per, e1 = min(e0 + per, n_expert);
    int total = 0, used = 0;
    for (int e = e0; e < e1; ++e) {
      total += counts[e];
      used += counts[e] > 0 ? 1 : 0;
    }
    int total_before = total, used_before = used;  // inclusive scans over the lanes
    for (int d = 1; d < gpu::group_lanes; d *= 2) {
      const int t = gpu::shfl_up(total_before, d), u = gpu::shfl_up(used_before, d);
      if (lane >= d) {
        total_before += t;
        used_before += u;
      }
    }
    int running = total_before - total, next_active = used_before - used;
    for (int e = e0; e < e1; ++e) {
      offsets[e] = running;
      running += counts[e];
      if (counts[e] > 0) active[next_active++] = e;
    }
    if (lane == gpu::group_lanes - 1) {
      offsets[n_expert] = total_before;
      n_active = used_before;
    }
  }
  __syncthreads();
  for (int e = tid; e <= n_expert; e += blockDim.x) r.offsets[e] = offsets[e];
  const int64_t choices = n_rows * n_used;  // moe_grid_experts, on the device
  const auto grid = static_cast<int>(choices < n_expert ? choices : n_expert);
  for (int k = tid; k < grid; k += blockDim.x) r.active[k] = k < n_active ? active[k] : -1;
  // row_slots first holds each choice's slot, in choice order.
  for (int e = tid; e < n_expert; e += blockDim.x) {
    if (counts[e] == 0) continue;
    int next = offsets[e];
    for (int64_t i = 0; i < n_choices; ++i) {
      if (r.choice_expert[i] != e) continue;
      r.slot_rows[next] = static_cast<int32_t>(i / n_used);
      r.row_slots[i] = next++;
    }
  }
  __syncthreads();
  for (int64_t row = tid; row < n_rows; row += blockDim.x) {
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

__global__ void plan_kernel(int64_t n_rows, int n_expert, int n_used, MoeRouting r) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  plan_routes(n_rows, n_expert, n_used, r);
}

// Up to kRouteGroups tokens (a decode step): routing and plan in one block, one launch.
__global__ void __launch_bounds__(kRouteGroups* gpu::group_lanes)
    route_and_plan_kernel(const float* logits, int64_t n_rows, int n_expert, int n_used, bool normalize, MoeRouting r) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  __shared__ float probs[kRouteGroups][kMaxExperts];
  const int group = static_cast<int>(threadIdx.x / gpu::group_lanes);
  if (group < n_rows) route_row(logits, group, n_expert, n_used, normalize, r, probs[group]);
  __syncthreads();  // the choices (global memory) are visible to the whole block
  plan_routes(n_rows, n_expert, n_used, r);
}

// A thread per (row, column): the row's n_used expert outputs, kChunk of them loaded before any
// is added, added in ascending expert order (multiply, then add: the CPU's operations).
// NOTE(moe): a block per row walking the columns cost a decode layer of Qwen3-30B-A3B 13 us.
__global__ void combine_kernel(const float* y, int64_t cols, MoeRouting r, int n_used, float* out) {
  gpu::wait_for_inputs();
  gpu::start_next_kernel();
  constexpr int kChunk = 8;
  const int64_t row = blockIdx.x;
  const int64_t c = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.0f;
  for (int j0 = 0; j0 < n_used; j0 += kChunk) {
    float weight[kChunk], value[kChunk];
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      const int j = j0 + u < n_used ? j0 + u : n_used - 1;
      const int64_t slot = r.row_slots[row * n_used + j];
      weight[u] = r.row_weights[row * n_used + j];
      value[u] = y[slot * cols + c];
    }
#pragma unroll
    for (int u = 0; u < kChunk; ++u) {
      if (j0 + u < n_used) acc = acc + weight[u] * value[u];
    }
  }
  out[row * cols + c] = acc;
}

}  // namespace

size_t moe_routing_bytes(int64_t n_rows, int64_t n_expert, int64_t n_used) {
  const auto choices = static_cast<size_t>(n_rows * n_used);
  return 2 * aligned_bytes(choices * 4) + aligned_bytes(static_cast<size_t>(n_expert + 1) * 4) +
         3 * aligned_bytes(choices * 4) + aligned_bytes(static_cast<size_t>(n_expert) * 4);
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
  if (n_rows <= kRouteGroups) {
    (void)gpu::launch(route_and_plan_kernel, 1, kRouteGroups * gpu::group_lanes, 0, stream, logits, n_rows,
                      static_cast<int>(n_expert), static_cast<int>(n_used), normalize, routing);
    GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
    return {};
  }
  (void)gpu::launch(route_kernel, static_cast<unsigned>((n_rows + kRouteGroups - 1) / kRouteGroups),
                    kRouteGroups * gpu::group_lanes, 0, stream, logits, n_rows, static_cast<int>(n_expert),
                    static_cast<int>(n_used), normalize, routing);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  (void)gpu::launch(plan_kernel, 1, 256, 0, stream, n_rows, static_cast<int>(n_expert), static_cast<int>(n_used),
                    routing);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context + " plan");
  return {};
}

Status moe_combine(const float* y, int64_t cols, const MoeRouting& routing, int64_t n_rows, int64_t n_used, float* out,
                   gpu::stream_t stream) {
  if (n_rows == 0) return {};
  constexpr int kThreads = 256;
  const dim3 grid(static_cast<unsigned>(n_rows), static_cast<unsigned>((cols + kThreads - 1) / kThreads));
  (void)gpu::launch(combine_kernel, grid, kThreads, 0, stream, y, cols, routing, static_cast<int>(n_used), out);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "moe_combine(rows=" + std::to_string(n_rows) + ")");
  return {};
}

}  // namespace gufo::cuda
