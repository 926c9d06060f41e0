// llama.cpp's per-tensor quantization mix (see type_mix.h for the table), written from the
// rules of llama.cpp src/llama-quant.cpp: tensor_allows_quantization / the quantize filter,
// llama_tensor_get_type_impl and tensor_type_fallback.
// Tested by tests/unit/quantize/type_mix_test.cpp.
#include "quantize/type_mix.h"

#include <cctype>
#include <charconv>

#include "core/check.h"

namespace gufo::quantize {
namespace {

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower;
}

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

// ggml_n_dims: dimensions up to the last extent above 1 (at least 1).
int n_dims(std::span<const uint64_t> shape) {
  int dims = 1;
  for (size_t dim = 1; dim < shape.size(); ++dim) {
    if (shape[dim] > 1) dims = static_cast<int>(dim) + 1;
  }
  return dims;
}

// The quantize filter of llama_model_quantize_impl: only weights of 2+ dimensions, never
// norms, the MoE router, or (BERT) position and token-type embeddings.
bool allows_quantization(std::string_view name, std::span<const uint64_t> shape) {
  if (!name.ends_with("weight")) return false;
  if (n_dims(shape) < 2) return false;
  if (contains(name, "_norm.weight")) return false;
  if (contains(name, "ffn_gate_inp.weight")) return false;
  if (name == "position_embd.weight" || name == "token_types.weight") return false;
  return true;
}

// "blk.N." -> N, or -1.
int layer_of(std::string_view name) {
  if (!name.starts_with("blk.")) return -1;
  name.remove_prefix(4);
  int layer = -1;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), layer);
  if (error != std::errc() || end == name.data() + name.size() || *end != '.') return -1;
  return layer;
}

// llama_tensor_get_type_impl, for the ftypes Gufo writes.
DType mix_rule(QuantMix mix, const ModelFacts& model, std::string_view name, uint64_t ne0) {
  const DType base = quant_mix_base_type(mix);
  const bool more_bits_mix = mix == QuantMix::Q4_K_M || mix == QuantMix::Q5_K_M;
  const int n_layer = static_cast<int>(model.n_layer);
  const int layer_idx = layer_of(name);
  DType type = base;
  if (name == "output.weight" || (!model.has_output && name == "token_embd.weight")) {
    // NOTE(quantize): llama.cpp tests ne0 against the block of the mix's base type here.
    const uint64_t base_block = dtype_info(base).block_elems;
    if (ne0 % base_block != 0) return DType::Q8_0;
    return base == DType::Q8_0 ? DType::Q8_0 : DType::Q6_K;
  }
  if (name == "token_embd.weight") return base;
  if (contains(name, "attn_v.weight")) {
    if (more_bits_mix && use_more_bits(layer_idx, n_layer)) type = DType::Q6_K;
    if (model.is_70b_class && type == DType::Q4_K) type = DType::Q5_K;
    if (model.n_expert == 8) type = DType::Q8_0;
    return type;
  }
  if (contains(name, "attn_k.weight")) return model.n_expert == 8 ? DType::Q8_0 : base;
  if (contains(name, "ffn_down")) {
    if (more_bits_mix && use_more_bits(layer_idx, n_layer)) type = DType::Q6_K;
    return type;
  }
  if (contains(name, "attn_output.weight")) {
    if (model.n_expert == 8 && mix == QuantMix::Q4_K_M) type = DType::Q5_K;
    return type;
  }
  if (contains(name, "attn_qkv.weight")) {
    if (mix == QuantMix::Q4_K_M) type = DType::Q5_K;
    if (mix == QuantMix::Q5_K_M) type = DType::Q6_K;
    return type;
  }
  return type;
}

// tensor_type_fallback, with Gufo's types: see type_mix.h.
DType shape_fallback(DType type, uint64_t ne0) {
  if (ne0 % dtype_info(type).block_elems == 0) return type;
  if (ne0 % dtype_info(DType::Q8_0).block_elems == 0) return DType::Q8_0;
  return DType::F16;
}

}  // namespace

std::optional<QuantMix> parse_quant_mix(std::string_view text) {
  const std::string lower = lowercase(text);
  if (lower == "q8_0") return QuantMix::Q8_0;
  if (lower == "q6_k") return QuantMix::Q6_K;
  if (lower == "q5_k_m") return QuantMix::Q5_K_M;
  if (lower == "q4_k_m") return QuantMix::Q4_K_M;
  return std::nullopt;
}

std::string_view quant_mix_name(QuantMix mix) {
  switch (mix) {
    case QuantMix::Q8_0:
      return "Q8_0";
    case QuantMix::Q6_K:
      return "Q6_K";
    case QuantMix::Q5_K_M:
      return "Q5_K_M";
    case QuantMix::Q4_K_M:
      return "Q4_K_M";
  }
  GUFO_CHECK(false && "unknown QuantMix");
  return "";
}

DType quant_mix_base_type(QuantMix mix) {
  switch (mix) {
    case QuantMix::Q8_0:
      return DType::Q8_0;
    case QuantMix::Q6_K:
      return DType::Q6_K;
    case QuantMix::Q5_K_M:
      return DType::Q5_K;
    case QuantMix::Q4_K_M:
      return DType::Q4_K;
  }
  GUFO_CHECK(false && "unknown QuantMix");
  return DType::F32;
}

uint32_t quant_mix_file_type(QuantMix mix) {
  // llama.h: LLAMA_FTYPE_MOSTLY_Q8_0 = 7, Q4_K_M = 15, Q5_K_M = 17, Q6_K = 18.
  switch (mix) {
    case QuantMix::Q8_0:
      return 7;
    case QuantMix::Q6_K:
      return 18;
    case QuantMix::Q5_K_M:
      return 17;
    case QuantMix::Q4_K_M:
      return 15;
  }
  GUFO_CHECK(false && "unknown QuantMix");
  return 0;
}

std::optional<OutputType> parse_output_type(std::string_view text) {
  const std::string lower = lowercase(text);
  if (lower == "f32") return OutputType{DType::F32, std::nullopt};
  if (lower == "f16") return OutputType{DType::F16, std::nullopt};
  if (lower == "bf16") return OutputType{DType::BF16, std::nullopt};
  if (auto mix = parse_quant_mix(lower)) return OutputType{DType::F32, mix};
  return std::nullopt;
}

uint32_t output_file_type(const OutputType& type) {
  if (type.mix) return quant_mix_file_type(*type.mix);
  switch (type.plain) {
    case DType::F16:
      return 1;  // LLAMA_FTYPE_MOSTLY_F16
    case DType::BF16:
      return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    default:
      return 0;  // LLAMA_FTYPE_ALL_F32
  }
}

bool is_70b_class(std::string_view arch, uint32_t n_layer, uint32_t n_head, uint32_t n_head_kv) {
  // llama_model::load_hparams: llama with 80 layers is 65B when n_head == n_head_kv, else
  // 70B; qwen2 with 80 layers is 70B (Qwen2-72B).
  if (n_layer != 80) return false;
  if (arch == "llama") return n_head != n_head_kv;
  return arch == "qwen2";
}

bool use_more_bits(int layer_idx, int n_layer) {
  return layer_idx < n_layer / 8 || layer_idx >= 7 * n_layer / 8 || (layer_idx - n_layer / 8) % 3 == 2;
}

DType choose_tensor_type(QuantMix mix, const ModelFacts& model, std::string_view name, std::span<const uint64_t> shape,
                         DType source_type) {
  GUFO_CHECK(!shape.empty());
  if (!allows_quantization(name, shape)) return source_type;
  return shape_fallback(mix_rule(mix, model, name, shape[0]), shape[0]);
}

DType choose_output_tensor_type(const OutputType& type, const ModelFacts& model, std::string_view name,
                                std::span<const uint64_t> shape) {
  if (type.mix) return choose_tensor_type(*type.mix, model, name, shape, DType::F32);
  // convert's rule (hf_convert.cpp choose_type): 1-D and norms stay F32.
  if (!allows_quantization(name, shape)) return DType::F32;
  return type.plain;
}

}  // namespace gufo::quantize
