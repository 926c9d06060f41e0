// Writes tiny Hugging Face model folders for the converter tests: config.json, a
// model.safetensors with deterministic weights in F32/F16/BF16, and a 257-token byte-level
// BPE tokenizer.json. Used by tests/unit/convert/*_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "quant/half.h"
#include "tokenizer/unicode.h"

namespace gufo::convert::testing {

using nlohmann::json;

struct TinyTensor {
  std::string dtype;  // "F32", "F16", "BF16"
  std::vector<uint64_t> shape;
  std::vector<float> values;  // already representable in dtype (see make_values)
};

// Deterministic values, rounded to what `dtype` can hold so the test knows them exactly.
inline std::vector<float> make_values(const std::string& dtype, uint64_t n, uint32_t seed) {
  std::vector<float> out(n);
  for (uint64_t i = 0; i < n; ++i) {
    float value = 0.5f * std::sin(0.37f * static_cast<float>(i) + 1.3f * static_cast<float>(seed)) +
                  0.01f * static_cast<float>(seed % 7);
    if (dtype == "F16") value = quant::fp16_to_fp32(quant::fp32_to_fp16(value));
    if (dtype == "BF16") value = quant::bf16_to_fp32(quant::fp32_to_bf16(value));
    out[i] = value;
  }
  return out;
}

using TensorMap = std::map<std::string, TinyTensor>;

inline void write_safetensors(const std::filesystem::path& path, const TensorMap& tensors) {
  json header = json::object();
  std::vector<std::byte> data;
  for (const auto& [name, tensor] : tensors) {
    const uint64_t begin = data.size();
    for (float value : tensor.values) {
      if (tensor.dtype == "F32") {
        const auto* p = reinterpret_cast<const std::byte*>(&value);
        data.insert(data.end(), p, p + 4);
      } else {
        const uint16_t bits = tensor.dtype == "F16" ? quant::fp32_to_fp16(value) : quant::fp32_to_bf16(value);
        const auto* p = reinterpret_cast<const std::byte*>(&bits);
        data.insert(data.end(), p, p + 2);
      }
    }
    header[name] = {{"dtype", tensor.dtype}, {"shape", tensor.shape}, {"data_offsets", {begin, data.size()}}};
  }
  header["__metadata__"] = {{"format", "pt"}};
  const std::string text = header.dump();  // odd length on purpose sometimes: unaligned data
  const uint64_t n = text.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

inline constexpr int kTokenizerTokens = 258;  // 256 bytes, "he", "<|end|>"

inline json tiny_tokenizer_json() {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) {
    std::string token;
    tokenizer::append_utf8(token, tokenizer::byte_to_codepoint(static_cast<uint8_t>(b)));
    vocab[token] = b;
  }
  vocab["he"] = 256;
  const char* regex =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array({"h e"})}}},
          {"added_tokens", json::array({{{"id", 257}, {"content", "<|end|>"}, {"special", true}}})},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}}}};
}

struct TinyShape {
  uint32_t n_vocab = 264;  // > tokenizer tokens: the converter pads with [PAD<id>]
  uint32_t n_embd = 64;
  uint32_t n_layer = 2;
  uint32_t n_ff = 96;
  uint32_t n_head = 4;
  uint32_t n_head_kv = 2;
  uint32_t head_dim = 16;
  uint32_t n_expert = 4;
  uint32_t n_expert_used = 2;
  uint32_t n_ff_exp = 32;
};

// config.json and tensors of a tiny model of `hf_arch` (Qwen3ForCausalLM, LlamaForCausalLM,
// Qwen2ForCausalLM, Qwen3MoeForCausalLM). Dtypes vary by tensor to cover F32/F16/BF16 input.
inline std::pair<json, TensorMap> tiny_model(const std::string& hf_arch, const TinyShape& s = {}) {
  const bool qwen3 = hf_arch == "Qwen3ForCausalLM" || hf_arch == "Qwen3MoeForCausalLM";
  const bool moe = hf_arch == "Qwen3MoeForCausalLM";
  const bool tied = qwen3;
  json config = {{"architectures", {hf_arch}},
                 {"vocab_size", s.n_vocab},
                 {"hidden_size", s.n_embd},
                 {"num_hidden_layers", s.n_layer},
                 {"intermediate_size", s.n_ff},
                 {"num_attention_heads", s.n_head},
                 {"num_key_value_heads", s.n_head_kv},
                 {"max_position_embeddings", 512},
                 {"rms_norm_eps", 1e-6},
                 {"rope_theta", 10000.0},
                 {"tie_word_embeddings", tied}};
  if (qwen3) config["head_dim"] = s.head_dim;
  if (moe) {
    config["num_experts"] = s.n_expert;
    config["num_experts_per_tok"] = s.n_expert_used;
    config["moe_intermediate_size"] = s.n_ff_exp;
    config["norm_topk_prob"] = true;
  }
  TensorMap tensors;
  uint32_t seed = 1;
  const auto add = [&](const std::string& name, std::vector<uint64_t> shape, const std::string& dtype) {
    uint64_t n = 1;
    for (uint64_t extent : shape) n *= extent;
    tensors[name] = TinyTensor{dtype, shape, make_values(dtype, n, seed++)};
  };
  const uint64_t q_rows = uint64_t{s.n_head} * s.head_dim;
  const uint64_t kv_rows = uint64_t{s.n_head_kv} * s.head_dim;
  add("model.embed_tokens.weight", {s.n_vocab, s.n_embd}, "BF16");
  add("model.norm.weight", {s.n_embd}, "F32");
  if (!tied) add("lm_head.weight", {s.n_vocab, s.n_embd}, "F16");
  for (uint32_t layer = 0; layer < s.n_layer; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".";
    add(p + "input_layernorm.weight", {s.n_embd}, "F32");
    add(p + "post_attention_layernorm.weight", {s.n_embd}, "BF16");
    add(p + "self_attn.q_proj.weight", {q_rows, s.n_embd}, "F32");
    add(p + "self_attn.k_proj.weight", {kv_rows, s.n_embd}, "F16");
    add(p + "self_attn.v_proj.weight", {kv_rows, s.n_embd}, "BF16");
    add(p + "self_attn.o_proj.weight", {s.n_embd, q_rows}, "F32");
    if (hf_arch == "Qwen2ForCausalLM") {
      add(p + "self_attn.q_proj.bias", {q_rows}, "F32");
      add(p + "self_attn.k_proj.bias", {kv_rows}, "BF16");
      add(p + "self_attn.v_proj.bias", {kv_rows}, "F16");
    }
    if (qwen3) {
      add(p + "self_attn.q_norm.weight", {s.head_dim}, "F32");
      add(p + "self_attn.k_norm.weight", {s.head_dim}, "F32");
    }
    if (moe) {
      add(p + "mlp.gate.weight", {s.n_expert, s.n_embd}, "F32");
      for (uint32_t e = 0; e < s.n_expert; ++e) {
        const std::string ex = p + "mlp.experts." + std::to_string(e) + ".";
        add(ex + "gate_proj.weight", {s.n_ff_exp, s.n_embd}, "F32");
        add(ex + "up_proj.weight", {s.n_ff_exp, s.n_embd}, "F16");
        add(ex + "down_proj.weight", {s.n_embd, s.n_ff_exp}, "BF16");
      }
    } else {
      add(p + "mlp.gate_proj.weight", {s.n_ff, s.n_embd}, "F32");
      add(p + "mlp.up_proj.weight", {s.n_ff, s.n_embd}, "F16");
      add(p + "mlp.down_proj.weight", {s.n_embd, s.n_ff}, "BF16");
    }
  }
  return {config, tensors};
}

inline void write_folder(const std::filesystem::path& dir, const json& config, const TensorMap& tensors) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << config.dump(2);
  std::ofstream(dir / "tokenizer.json") << tiny_tokenizer_json().dump();
  std::ofstream(dir / "tokenizer_config.json") << json{{"eos_token", "<|end|>"}}.dump();
  write_safetensors(dir / "model.safetensors", tensors);
}

}  // namespace gufo::convert::testing
