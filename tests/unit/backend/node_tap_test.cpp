// The per-node tap (backend.h, NodeTap): a forward shows every computed node once, in graph
// order, by its stable name and shape, and the last one it shows is the logits it returns.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/common/tiny_model.h"

namespace gufo::backend {
namespace {

TEST(NodeTap, SeesEveryNodeInOrderEndingWithTheLogits) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  const std::vector<int32_t> tokens = {5, 6, 7};
  auto graph = tiny.model->build_graph({.n_tokens = 3, .n_outputs = 1});
  ASSERT_TRUE(graph.ok());
  auto cache = tiny.cpu.create_kv_cache(
      {.n_layer = tiny.model->hparams().n_layer, .n_embd_kv = tiny.model->hparams().n_embd_kv(), .n_ctx = 8});
  ASSERT_TRUE(cache.ok());
  std::vector<std::string> names;
  std::vector<float> last;
  const NodeTap tap = [&](const model::Node& node, std::span<const float> values) {
    EXPECT_EQ(values.size(), static_cast<size_t>(node.rows * node.cols)) << node.name;
    names.push_back(node.name);
    last.assign(values.begin(), values.end());
  };
  std::vector<float> logits(static_cast<size_t>(tiny.model->hparams().n_vocab));
  const Status s =
      tiny.cpu.forward(*graph, Batch::sequence(tokens, 0, false), **cache, {.logits = logits, .argmax = {}}, &tap);
  ASSERT_TRUE(s.ok()) << s.error().message;
  std::vector<std::string> want;
  for (const model::Node& node : graph->nodes) {
    if (node.op != model::Op::Weight && node.op != model::Op::Tokens) want.push_back(node.name);
  }
  EXPECT_EQ(names, want);
  EXPECT_EQ(names.back(), "logits");
  EXPECT_EQ(last, logits);
}

}  // namespace
}  // namespace gufo::backend
