// One forward pass of a batch given row by row (token, position, sequence), every row an
// output: the logits of each row, row-major. Shared by the model tests that compare batchings
// (paged_kv_test, batch_invariance_test); failures are test failures, not crashes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "backend/backend.h"
#include "engine/model.h"

namespace gufo::testing {

struct BatchRow {
  int32_t token;
  int32_t position;
  int32_t seq;
};

inline std::vector<float> forward_rows(const engine::Model& model, backend::Backend& backend, backend::KvCache& cache,
                                       const std::vector<BatchRow>& rows) {
  backend::Batch batch;
  for (size_t i = 0; i < rows.size(); ++i) {
    batch.tokens.push_back(rows[i].token);
    batch.positions.push_back(rows[i].position);
    batch.seq_ids.push_back(rows[i].seq);
    batch.output_rows.push_back(static_cast<int32_t>(i));
  }
  std::vector<float> logits(rows.size() * static_cast<size_t>(model.hparams().n_vocab));
  auto graph = model.build_graph({.n_tokens = batch.n_tokens(), .n_outputs = batch.n_tokens()});
  EXPECT_TRUE(graph.ok()) << graph.error().message;
  if (!graph.ok()) return logits;
  const Status status = backend.forward(*graph, batch, cache, {.logits = logits, .argmax = {}});
  EXPECT_TRUE(status.ok()) << status.error().message;
  return logits;
}

// The token ids the batching tests feed: a fixed, spread-out sequence within any vocabulary of
// 205 or more.
inline std::vector<int32_t> prompt_tokens(int n) {
  std::vector<int32_t> tokens(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) tokens[static_cast<size_t>(i)] = (i * 37 + 11) % 200 + 5;
  return tokens;
}

}  // namespace gufo::testing
