// Mixture-of-experts routing and combine (see ops.h). CPU reference: backend/cpu/ops/moe.cpp
// (route_token and the ascending-expert sum of moe_ffn). The expert FFNs themselves are
// mat_mul_q / swiglu in expert mode (backend/cuda/cuda_backend.cpp).
// Tested by tests/ops/moe_test.cpp.
#include <string>

#include "backend/cuda/alignment.h"
#include "backend/cuda/check.cuh"
#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {
namespace {

constexpr int kMaxExperts = 512;
constexpr int kMaxUsed = 32;


// One thread per token, in the CPU's order: softmax (max, exp, sequential sum, divide), then
// n_used rounds of "most probable unused expert, ties to the lower index", then renormalize.
__global__ void route_kernel(const float* logits, int64_t n_rows, int n_expert, int n_used, bool normalize,
                             MoeRouting r) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= n_rows) return;
  const float* l = logits + row * n_expert;
  float probs[kMaxExperts];
  float max = l[0];
  for (int e = 1; e < n_expert; ++e) max = fmaxf(max, l[e]);
  float sum = 0.0f;
  for (int e = 0; e < n_expert; ++e) {
    probs[e] = expf(l[e] - max);
    sum += probs[e];
  }
  for (int e = 0; e < n_expert; ++e) probs[e] /= sum;
  float chosen_sum = 0.0f;
  int32_t* experts = r.choice_expert + row * n_used;
  float* weights = r.choice_weight + row * n_used;
  for (int slot = 0; slot < n_used; ++slot) {
    int best = -1;
    for (int e = 0; e < n_expert; ++e) {
      bool taken = false;
      for (int j = 0; j < slot; ++j) taken = taken || experts[j] == e;
      if (!taken && (best < 0 || probs[e] > probs[best])) best = e;
    }
    experts[slot] = best;
    weights[slot] = probs[best];
    chosen_sum += probs[best];
  }
  if (normalize) {
    for (int slot = 0; slot < n_used; ++slot) weights[slot] /= chosen_sum;
  }
}

// One block: expert e's slots are the tokens routed to it, ascending; each token's slots are
// then listed by ascending expert for the combine.
__global__ void plan_kernel(int64_t n_rows, int n_expert, int n_used, MoeRouting r) {
  const int64_t n_choices = n_rows * n_used;
  for (int e = static_cast<int>(threadIdx.x); e < n_expert; e += blockDim.x) {
    int count = 0;
    for (int64_t i = 0; i < n_choices; ++i) count += r.choice_expert[i] == e;
    r.offsets[e + 1] = count;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    r.offsets[0] = 0;
    for (int e = 0; e < n_expert; ++e) r.offsets[e + 1] += r.offsets[e];
  }
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
  return 2 * aligned_bytes(choices * 4) + aligned_bytes(static_cast<size_t>(n_expert + 1) * 4) + 3 * aligned_bytes(choices * 4);
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
  route_kernel<<<static_cast<unsigned>((n_rows + 127) / 128), 128, 0, stream>>>(
      logits, n_rows, static_cast<int>(n_expert), static_cast<int>(n_used), normalize, routing);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context);
  plan_kernel<<<1, 256, 0, stream>>>(n_rows, static_cast<int>(n_expert), static_cast<int>(n_used), routing);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), context + " plan");
  return {};
}

Status moe_combine(const float* y, int64_t cols, const MoeRouting& routing, int64_t n_rows, int64_t n_used,
                   float* out, gpu::stream_t stream) {
  if (n_rows == 0) return {};
  combine_kernel<<<static_cast<unsigned>(n_rows), 256, 0, stream>>>(y, cols, routing, static_cast<int>(n_used), out);
  GUFO_GPU_RETURN_IF_ERROR(gpu::get_last_error(), "moe_combine(rows=" + std::to_string(n_rows) + ")");
  return {};
}

}  // namespace gufo::cuda
