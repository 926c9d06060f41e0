// Hyper-parameters of a decoder-only transformer, read from GGUF metadata with the key names
// the GGUF ecosystem uses ({arch}.block_count, ...). Validated so the forward pass can trust
// every count. Tested through tests/unit/model/forward_test.cpp and moe_test.cpp (which load
// real converted models).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "gguf/file.h"

namespace gufo::model {

enum class Arch { Qwen3, Llama, Qwen2, Qwen3Moe };

// NOTE(rope): "normal" rotates adjacent pairs (x[2i], x[2i+1]); "neox" rotates x[i] with
// x[i + head_dim/2]. The GGUF ecosystem stores llama's q/k weights permuted for normal rope
// and qwen2/qwen3's unpermuted for neox rope, so the type follows from the architecture.
enum class RopeType { Normal, Neox };

// How /v1/embeddings turns a sequence's final hidden states into one vector, by the values
// of llama.cpp's {arch}.pooling_type: none (no pooled vector), mean over the tokens, the
// first token (cls), the last token (Qwen3-Embedding), rank (rerankers).
enum class Pooling : uint32_t { None = 0, Mean = 1, Cls = 2, Last = 3, Rank = 4 };
std::string_view pooling_name(Pooling pooling);

struct HParams {
  Arch arch = Arch::Qwen3;
  std::string arch_name;  // general.architecture
  int64_t n_vocab = 0;    // rows of token_embd
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // {arch}.attention.key_length, else n_embd / n_head
  int64_t n_ff = 0;
  float rms_eps = 1e-6f;
  float rope_theta = 10000.0f;
  // (The per-architecture graph choices, q/k norms, biases and the RoPE type, are
  // architectures.cpp's DecoderOptions; rope_freqs.weight is found by the graph builder.)
  bool tied_output = false;         // no output.weight: the logits use token_embd
  Pooling pooling = Pooling::Mean;  // {arch}.pooling_type; mean when the file declares none
  // Mixture of experts (qwen3moe; all 0 for dense models): every layer's FFN is the weighted
  // sum of n_expert_used of n_expert SwiGLU experts of width n_ff_exp.
  int64_t n_expert = 0;             // {arch}.expert_count
  int64_t n_expert_used = 0;        // {arch}.expert_used_count (top-k)
  int64_t n_ff_exp = 0;             // {arch}.expert_feed_forward_length
  bool expert_weights_norm = true;  // renormalize the top-k weights to sum to 1

  bool is_moe() const { return n_expert > 0; }

  int64_t n_embd_q() const { return n_head * head_dim; }
  int64_t n_embd_kv() const { return n_head_kv * head_dim; }
};

Result<Arch> arch_from_name(std::string_view name);
std::string_view arch_name(Arch arch);

// Reads and checks the hyper-parameters (the tied output from the tensor table). Errors name
// the file and the key.
Result<HParams> load_hparams(const gguf::File& file);

}  // namespace gufo::model
