// Per-tensor type choice for `gufo quantize` and `gufo synth`: llama.cpp's quantization mixes
// (src/llama-quant.cpp, llama_tensor_get_type and the shape fallback) for the presets Gufo
// writes, so a Gufo Q4_K_M file holds the same tensor types as llama-quantize's.
// Tested by tests/unit/quantize/type_mix_test.cpp.
//
// The mixes (dense models; "more bits" layers are use_more_bits(): the first and last eighth
// of the layers and every third layer in between):
//
//   tensor                        Q8_0   Q6_K   Q5_K_M              Q4_K_M
//   output.weight                 Q8_0   Q6_K   Q6_K                Q6_K
//   token_embd.weight (untied)    Q8_0   Q6_K   Q5_K                Q4_K
//   token_embd.weight (tied: no   Q8_0   Q6_K   Q6_K                Q6_K
//     output.weight)
//   blk.N.attn_v.weight           Q8_0   Q6_K   Q6_K more bits,     Q6_K more bits,
//                                               else Q5_K           else Q4_K
//   blk.N.ffn_down*               Q8_0   Q6_K   Q6_K more bits,     Q6_K more bits,
//                                               else Q5_K           else Q4_K
//   blk.N.attn_qkv.weight         Q8_0   Q6_K   Q6_K                Q5_K
//   other 2-D+ weights            Q8_0   Q6_K   Q5_K                Q4_K
//   1-D tensors, *_norm.weight,   unchanged (F32 as converters write them)
//     ffn_gate_inp.weight, biases
//
// Model-specific bumps also follow llama.cpp: 8-expert MoE models get attn_v and attn_k in
// Q8_0 (and attn_output Q5_K under Q4_K_M); 70B-class models (llama/qwen2 with 80 layers)
// get a Q4_K attn_v raised to Q5_K.
// Fallback when ne0 is not a multiple of the chosen type's block: llama.cpp goes Q6_K -> Q8_0,
// Q5_K -> Q5_1, Q4_K -> Q5_0, then F16 when even that block does not divide ne0. Gufo has no
// Q5_0/Q5_1, so every K-quant falls back to Q8_0 when ne0 % 32 == 0, else F16 (Q8_0 too).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace gufo::quantize {

enum class QuantMix { Q8_0, Q6_K, Q5_K_M, Q4_K_M };

// "q8_0", "q6_k", "q5_k_m", "q4_k_m" (case-insensitive).
std::optional<QuantMix> parse_quant_mix(std::string_view text);
std::string_view quant_mix_name(QuantMix mix);  // "Q4_K_M", ...
// The type most weights get (llama.cpp's default_type for the ftype).
DType quant_mix_base_type(QuantMix mix);
// general.file_type: llama.cpp's LLAMA_FTYPE_MOSTLY_* number.
uint32_t quant_mix_file_type(QuantMix mix);

// What `gufo synth --type` accepts: a plain float type (convert's rule: 1-D tensors F32,
// the rest this type) or a quantization mix.
struct OutputType {
  DType plain = DType::F32;  // used when mix is empty: F32, F16 or BF16
  std::optional<QuantMix> mix;
};
// "f32", "f16", "bf16" or a mix name (case-insensitive).
std::optional<OutputType> parse_output_type(std::string_view text);
uint32_t output_file_type(const OutputType& type);  // general.file_type

// The facts about the whole model the mix depends on.
struct ModelFacts {
  uint32_t n_layer = 0;
  uint32_t n_expert = 0;      // 0 or 1: dense
  bool has_output = true;     // false: tied embeddings, token_embd is also the output
  bool is_70b_class = false;  // llama.cpp's LLM_TYPE_70B (see is_70b_class below)
};

// llama.cpp's model type test for LLM_TYPE_70B, for the architectures Gufo reads.
bool is_70b_class(std::string_view arch, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv);

// llama.cpp's use_more_bits: layers that keep more precision in the _M mixes.
bool use_more_bits(int layer_idx, int n_layer);

// The type tensor `name` of shape `shape` (ne0 first) gets under `mix`. Tensors llama.cpp
// never quantizes keep `source_type`.
DType choose_tensor_type(QuantMix mix, const ModelFacts& model, std::string_view name, std::span<const uint64_t> shape,
                         DType source_type);

// The type under `type` (a plain type or a mix) for a tensor whose source is F32.
DType choose_output_tensor_type(const OutputType& type, const ModelFacts& model, std::string_view name,
                                std::span<const uint64_t> shape);

}  // namespace gufo::quantize
