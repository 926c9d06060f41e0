// The CUDA backend's activation planner (backend/cuda/activation_plan.h), on real graphs of
// the tiny models: no two buffers that are live at once overlap, every buffer is aligned, and
// the arena is far smaller than one buffer per node.
#include <gtest/gtest.h>

#include "backend/cuda/activation_plan.h"
#include "backend/cuda/fusion_plan.h"
#include "tests/unit/common/tiny_model.h"

namespace gufo::cuda {
namespace {

// With fused runs (fusion_plan.h), a buffer lives until the end of its last reader's run:
// one kernel reads and writes every member's buffers.
TEST(ActivationPlan, LiveBuffersNeverOverlap) {
  for (const char* name : {"tiny-qwen3", "tiny-qwen3-moe"}) {
    for (bool fused : {false, true}) {
      testing::TinyModel tiny(name, "q8_0");
      ASSERT_NE(tiny.model, nullptr);
      for (int64_t n_tokens : {1, 7, 64}) {
        auto graph = tiny.model->build_graph({.n_tokens = n_tokens, .n_outputs = 1});
        ASSERT_TRUE(graph.ok());
        const FusionPlan fusions = plan_fusions(*graph, fused);
        EXPECT_EQ(fusions.runs.empty(), !fused);
        const ActivationPlan plan = plan_activations(*graph, &fusions.run_end);
        const size_t n = graph->nodes.size();
        std::vector<size_t> last_use(n, 0);
        for (size_t id = 0; id < n; ++id) {
          last_use[id] = static_cast<size_t>(fusions.run_end[id]);
          for (model::NodeId src : graph->nodes[id].src) {
            if (src != model::kNoNode) last_use[static_cast<size_t>(src)] = static_cast<size_t>(fusions.run_end[id]);
          }
        }
        last_use[static_cast<size_t>(graph->output)] = n;
        size_t one_each = 0;
        for (size_t a = 0; a < n; ++a) {
          if (plan.offsets[a] == kNoBuffer) continue;
          const size_t bytes_a = static_cast<size_t>(graph->nodes[a].rows * graph->nodes[a].cols) * 4;
          one_each += bytes_a;
          EXPECT_EQ(plan.offsets[a] % 256, 0u);
          EXPECT_LE(plan.offsets[a] + bytes_a, plan.arena_bytes);
          for (size_t b = a + 1; b < n; ++b) {
            if (plan.offsets[b] == kNoBuffer || b > last_use[a]) continue;  // a is dead when b is made
            const size_t bytes_b = static_cast<size_t>(graph->nodes[b].rows * graph->nodes[b].cols) * 4;
            const bool disjoint =
                plan.offsets[a] + bytes_a <= plan.offsets[b] || plan.offsets[b] + bytes_b <= plan.offsets[a];
            EXPECT_TRUE(disjoint) << name << ": " << graph->nodes[a].name << " and " << graph->nodes[b].name;
          }
        }
        EXPECT_LT(plan.arena_bytes, one_each) << name << " n_tokens=" << n_tokens;
      }
    }
  }
}

}  // namespace
}  // namespace gufo::cuda
