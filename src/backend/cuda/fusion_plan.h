// Which runs of graph nodes the CUDA backend launches as one kernel. Decode spends ~2 us per
// launch however small the kernel, and a Qwen3 layer is ~20 nodes; these runs are the small
// nodes that read what the node before them wrote:
//   - AddNorm: a residual Add and the RmsNorm of its sum (group = the whole row);
//   - Norm: an RmsNorm of a whole row on its own (the first layer's, after the embedding);
//     both also quantize the normalized rows for the matmuls that read them, when those are
//     all integer matmuls of one activation format;
//   - QkNormRope: Qwen3's per-head RmsNorm of q and of k, then RoPE (neox) of both, and,
//     when the attention after them reads those k and v, their store into the KV cache;
//   - SwigluQuant: the SwiGLU product and its quantization for the down projection;
//   - MatMuls: two or three integer matmuls in a row that read one input with weights of one
//     type (q, k and v; gate and up): one launch where the decode kernel takes the batch.
// A fused kernel writes every node's output (so taps and later readers see them) with the
// same float operations in the same order as the separate kernels: the same bits.
// Plain C++ (no CUDA): tested by tests/unit/backend/fusion_plan_test.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "model/graph.h"

namespace gufo::cuda {

enum class FusionKind { None, AddNorm, Norm, QkNormRope, SwigluQuant, MatMuls };

// The most matmuls one MatMuls run holds (ops.h, mat_mul_q_parts).
inline constexpr int kMaxFusedMatMuls = 3;

// Activations quantized by a fused norm: none, 32-blocks (Q8_0 weights) or 256-blocks.
enum class FusedQuant { None, Q8_0, Q8K };

struct Fusion {
  FusionKind kind = FusionKind::None;
  std::vector<model::NodeId> nodes;  // the run's nodes, in graph order
  FusedQuant quant = FusedQuant::None;
  model::NodeId stores_kv_of = model::kNoNode;  // QkNormRope: the Attention whose K/V it stores
};

struct FusionPlan {
  std::vector<Fusion> runs;
  // Per node: the index in `runs` of the run it starts, -1 when it starts none; and the last
  // node of its run (itself when it is in none), where the activation plan frees its sources.
  std::vector<int> starts;
  std::vector<model::NodeId> run_end;
  // Per node: an Attention whose K/V a run before it stored (it stores nothing itself).
  std::vector<bool> kv_stored;
};

// The runs of `graph` (none when `enabled` is false: then every node runs alone).
FusionPlan plan_fusions(const model::Graph& graph, bool enabled);

// The activation format an integer matmul of `type` reads (FusedQuant::None: no integer kernel).
FusedQuant matmul_quant(DType type);

}  // namespace gufo::cuda
