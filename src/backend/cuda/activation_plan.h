// Where each node's f32 output lives in one device arena during a forward: a buffer is taken
// when its node runs and given back after its last reader (the graph output is kept), first
// fit over the free ranges, so a prefill's arena is a few layers' worth, not the whole graph.
// Plain C++ (no CUDA): tested on any machine by tests/unit/backend/activation_plan_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/graph.h"

namespace gufo::cuda {

inline constexpr size_t kNoBuffer = SIZE_MAX;

struct ActivationPlan {
  std::vector<size_t> offsets;  // per node: byte offset in the arena, or kNoBuffer (weights, tokens)
  size_t arena_bytes = 0;
};

// run_end (fusion_plan.h, FusionPlan::run_end), when given: the last node of each node's fused
// run; a run's sources stay live until its last node.
ActivationPlan plan_activations(const model::Graph& graph, const std::vector<model::NodeId>* run_end = nullptr);

}  // namespace gufo::cuda
