// Batch helpers and validation shared by every backend (see backend.h).
#include <string>

#include "backend/backend.h"

namespace gufo::backend {

Batch Batch::sequence(std::span<const int32_t> tokens, int32_t start, bool all_logits) {
  Batch batch;
  batch.tokens.assign(tokens.begin(), tokens.end());
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.positions.push_back(start + static_cast<int32_t>(i));
    batch.seq_ids.push_back(0);
    if (all_logits || i + 1 == tokens.size()) batch.output_rows.push_back(static_cast<int32_t>(i));
  }
  return batch;
}

void Batch::pad(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    tokens.push_back(0);
    positions.push_back(0);
    seq_ids.push_back(kPaddingSeq);
  }
}

Status validate_batch(const model::Graph& graph, const Batch& batch, const KvCacheSpec& cache) {
  const int64_t n = batch.n_tokens();
  if (n != graph.n_tokens || static_cast<int64_t>(batch.output_rows.size()) != graph.n_outputs) {
    return Error{"batch of " + std::to_string(n) + " tokens and " + std::to_string(batch.output_rows.size()) +
                 " outputs does not fit a graph built for " + std::to_string(graph.n_tokens) + " and " +
                 std::to_string(graph.n_outputs)};
  }
  if (static_cast<int64_t>(batch.positions.size()) != n || static_cast<int64_t>(batch.seq_ids.size()) != n) {
    return Error{"batch: tokens, positions and seq_ids differ in length"};
  }
  for (int64_t i = 0; i < n; ++i) {
    if (batch.positions[i] < 0 || batch.positions[i] >= cache.n_ctx) {
      return Error{"batch: position " + std::to_string(batch.positions[i]) + " is outside the context of " +
                   std::to_string(cache.n_ctx) + " tokens"};
    }
    if (batch.seq_ids[i] != kPaddingSeq && (batch.seq_ids[i] < 0 || batch.seq_ids[i] >= cache.n_seq)) {
      return Error{"batch: sequence id " + std::to_string(batch.seq_ids[i]) + " out of range"};
    }
  }
  for (const model::Node& node : graph.nodes) {  // the embedding lookup's table bounds the ids
    if (node.op != model::Op::GetRows) continue;
    const int64_t n_vocab = graph.nodes[static_cast<size_t>(node.src[0])].rows;
    for (int32_t id : batch.tokens) {
      if (id < 0 || id >= n_vocab) {
        return Error{"token id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(n_vocab) +
                     " tokens"};
      }
    }
  }
  for (size_t i = 0; i < batch.output_rows.size(); ++i) {
    const int32_t row = batch.output_rows[i];
    if (row < 0 || row >= n || (i > 0 && row <= batch.output_rows[i - 1])) {
      return Error{"batch: output rows must be ascending token indices"};
    }
    if (batch.seq_ids[static_cast<size_t>(row)] == kPaddingSeq) {
      return Error{"batch: output row " + std::to_string(row) + " is a padding row"};
    }
  }
  return {};
}

Status validate_outputs(const model::Graph& graph, const ForwardOutputs& outputs) {
  const model::Node& out = graph.nodes[static_cast<size_t>(graph.output)];
  const size_t n_logits = static_cast<size_t>(out.rows * out.cols);
  if (!outputs.logits.empty() && outputs.logits.size() != n_logits) {
    return Error{"forward: logits buffer holds " + std::to_string(outputs.logits.size()) + " floats, needs " +
                 std::to_string(n_logits)};
  }
  if (!outputs.argmax.empty() && outputs.argmax.size() != static_cast<size_t>(out.rows)) {
    return Error{"forward: argmax buffer holds " + std::to_string(outputs.argmax.size()) + " ids, needs " +
                 std::to_string(out.rows)};
  }
  return {};
}

}  // namespace gufo::backend
