// What distinguishes each supported architecture, as data. Adding an architecture that is a
// decoder of these parts means adding a row here and its hparams in hparams.cpp.
//   qwen3: per-head q/k RMSNorm, neox RoPE (weights unpermuted), usually tied output (0.6B)
//   llama: Llama 3.x; "normal" RoPE because the GGUF converter permutes q/k weights, and
//          rope_freqs.weight for llama3 rope scaling
//   qwen2: biases on q, k and v; neox RoPE
//   qwen3moe: qwen3's attention; every FFN a mixture of experts, no shared expert
#include "model/decoder.h"

namespace gufo::model {

DecoderOptions decoder_options(Arch arch) {
  switch (arch) {
    case Arch::Qwen3:
      return {.qk_norm = true, .qkv_bias = false, .rope = RopeType::Neox};
    case Arch::Llama:
      return {.qk_norm = false, .qkv_bias = false, .rope = RopeType::Normal};
    case Arch::Qwen2:
      return {.qk_norm = false, .qkv_bias = true, .rope = RopeType::Neox};
    case Arch::Qwen3Moe:
      return {.qk_norm = true, .qkv_bias = false, .rope = RopeType::Neox, .moe = true};
  }
  return {};
}

}  // namespace gufo::model
