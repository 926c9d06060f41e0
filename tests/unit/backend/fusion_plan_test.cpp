// The CUDA backend's fusion planner (backend/cuda/fusion_plan.h) on the graphs of the tiny
// models: which runs it finds, and that the activation plan keeps a run's buffers apart.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "backend/cuda/activation_plan.h"
#include "backend/cuda/fusion_plan.h"
#include "tests/unit/common/tiny_model.h"

namespace gufo::cuda {
namespace {

std::map<FusionKind, int> count_runs(const FusionPlan& plan) {
  std::map<FusionKind, int> counts;
  for (const Fusion& run : plan.runs) ++counts[run.kind];
  return counts;
}

TEST(FusionPlan, FindsTheResidualNormsAndQwen3sQkNormRope) {
  testing::TinyModel tiny("tiny-qwen3", "q8_0");
  ASSERT_NE(tiny.model, nullptr);
  const int64_t n_layer = tiny.model->hparams().n_layer;
  auto graph = tiny.model->build_graph({.n_tokens = 3, .n_outputs = 1});
  ASSERT_TRUE(graph.ok());
  const FusionPlan plan = plan_fusions(*graph, true);
  auto counts = count_runs(plan);
  // Each layer's two residual adds feed a norm, except the last one (it feeds output_rows).
  EXPECT_EQ(counts[FusionKind::AddNorm], 2 * n_layer - 1);
  EXPECT_EQ(counts[FusionKind::QkNormRope], n_layer);
  // The first layer's norm (after the embedding) and the output norm (read by the Q8_0 logits matmul).
  EXPECT_EQ(counts[FusionKind::Norm], 2);
  EXPECT_EQ(counts[FusionKind::SwigluQuant], n_layer);  // read by the Q8_0 down projection
  EXPECT_EQ(counts[FusionKind::MatMuls], 2 * n_layer);  // q, k and v; gate and up
  for (const Fusion& run : plan.runs) {
    const model::Node& first = graph->nodes[static_cast<size_t>(run.nodes.front())];
    const model::Node& last = graph->nodes[static_cast<size_t>(run.nodes.back())];
    if (run.kind == FusionKind::AddNorm) {
      EXPECT_EQ(first.op, model::Op::Add);
      EXPECT_EQ(last.op, model::Op::RmsNorm);
      EXPECT_EQ(last.src[0], run.nodes.front());
      EXPECT_EQ(run.quant, FusedQuant::Q8_0) << "the norm's readers are Q8_0 matmuls";
    }
    if (run.kind == FusionKind::QkNormRope) {
      EXPECT_EQ(first.op, model::Op::RmsNorm);
      EXPECT_EQ(last.op, model::Op::Rope);
      // It stores the K/V of the attention right after it, which then stores nothing.
      ASSERT_NE(run.stores_kv_of, model::kNoNode);
      const model::Node& attention = graph->nodes[static_cast<size_t>(run.stores_kv_of)];
      EXPECT_EQ(attention.op, model::Op::Attention);
      EXPECT_EQ(attention.src[1], run.nodes.back());
      EXPECT_TRUE(plan.kv_stored[static_cast<size_t>(run.stores_kv_of)]);
    }
    if (run.kind == FusionKind::MatMuls) {
      EXPECT_TRUE(run.nodes.size() == 3 ? first.name.find("attn_q") != std::string::npos
                                        : first.name.find("ffn_gate") != std::string::npos)
          << first.name << " starts a run of " << run.nodes.size();
      for (model::NodeId member : run.nodes) {
        const model::Node& node = graph->nodes[static_cast<size_t>(member)];
        EXPECT_EQ(node.op, model::Op::MatMul);
        EXPECT_EQ(node.src[0], first.src[0]) << node.name << " reads another input";
      }
    }
    for (model::NodeId member : run.nodes) {
      EXPECT_EQ(plan.run_end[static_cast<size_t>(member)], run.nodes.back());
      EXPECT_EQ(plan.starts[static_cast<size_t>(member)], member == run.nodes.front() ? &run - plan.runs.data() : -1);
    }
  }
  int stored = 0;
  for (size_t id = 0; id < graph->nodes.size(); ++id) stored += plan.kv_stored[id] ? 1 : 0;
  EXPECT_EQ(stored, n_layer);
  const FusionPlan none = plan_fusions(*graph, false);
  EXPECT_TRUE(none.runs.empty());
  EXPECT_EQ(std::count(none.kv_stored.begin(), none.kv_stored.end(), true), 0) << "unfused attention stores its own";
}

TEST(FusionPlan, LeavesNormsThatFloatMatmulsOrExpertsReadUnquantized) {
  testing::TinyModel dense("tiny-qwen3");  // f32 weights: no integer matmul
  ASSERT_NE(dense.model, nullptr);
  auto graph = dense.model->build_graph({.n_tokens = 2, .n_outputs = 2});
  ASSERT_TRUE(graph.ok());
  FusionPlan plan = plan_fusions(*graph, true);
  auto counts = count_runs(plan);
  EXPECT_EQ(counts[FusionKind::Norm], 0);
  EXPECT_EQ(counts[FusionKind::SwigluQuant], 0);
  EXPECT_EQ(counts[FusionKind::MatMuls], 0) << "f32 weights take the float matmul, one each";
  for (const Fusion& run : plan.runs) EXPECT_EQ(run.quant, FusedQuant::None);

  testing::TinyModel moe("tiny-qwen3-moe", "q8_0");
  ASSERT_NE(moe.model, nullptr);
  graph = moe.model->build_graph({.n_tokens = 2, .n_outputs = 1});
  ASSERT_TRUE(graph.ok());
  plan = plan_fusions(*graph, true);
  int moe_norms = 0;
  for (const Fusion& run : plan.runs) {
    if (run.kind != FusionKind::AddNorm) continue;
    const std::string& name = graph->nodes[static_cast<size_t>(run.nodes.back())].name;
    if (name.find("ffn_in") == std::string::npos) continue;
    EXPECT_EQ(run.quant, FusedQuant::None) << name << " is read by the router and the experts";
    ++moe_norms;
  }
  EXPECT_EQ(moe_norms, moe.model->hparams().n_layer);
}

TEST(FusionPlan, LlamaHasNoQkNorm) {
  testing::TinyModel tiny("tiny-llama", "q8_0");
  ASSERT_NE(tiny.model, nullptr);
  auto graph = tiny.model->build_graph({.n_tokens = 1, .n_outputs = 1});
  ASSERT_TRUE(graph.ok());
  const FusionPlan plan = plan_fusions(*graph, true);
  auto counts = count_runs(plan);
  EXPECT_EQ(counts[FusionKind::QkNormRope], 0);
  EXPECT_EQ(counts[FusionKind::AddNorm], 2 * tiny.model->hparams().n_layer - 1);
  EXPECT_EQ(std::count(plan.kv_stored.begin(), plan.kv_stored.end(), true), 0) << "llama's attention stores its own";
}

}  // namespace
}  // namespace gufo::cuda
