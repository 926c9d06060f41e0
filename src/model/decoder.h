// The decoder-only transformer that Qwen3, Llama 3, Qwen2 and Qwen3-MoE all are, built as a graph.
// The architectures differ only in the fields of DecoderOptions (architectures.cpp says which),
// never by branching on the architecture here. Tested by tests/unit/model/forward_test.cpp
// against Hugging Face transformers' logits (tests/data/models).
#pragma once

#include "core/result.h"
#include "model/graph.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace gufo::model {

struct DecoderOptions {
  bool qk_norm = false;   // RMSNorm over each head of q and k before RoPE (qwen3)
  bool qkv_bias = false;  // q, k, v projections have biases (qwen2)
  RopeType rope = RopeType::Neox;
  bool moe = false;  // every FFN is a mixture of experts (qwen3moe), sized by HParams
};

// The options of an architecture (architectures.cpp).
DecoderOptions decoder_options(Arch arch);

// Token ids in, logits [n_outputs, n_vocab] out; or, for GraphOutput::Hidden, the final
// normalized hidden state [n_outputs, n_embd] ("result_norm") that embeddings pool.
Result<Graph> build_decoder(const HParams& hp, const WeightTable& weights, BatchShape shape);

}  // namespace gufo::model
