// config.json -> HfConfig (see hf_config.h). The key names and defaults follow
// transformers' configuration_{llama,qwen2,qwen3,qwen3_moe}.py and the fields llama.cpp's
// convert_hf_to_gguf.py (TextModel.set_gguf_parameters) reads.
// Tested by tests/unit/convert/hf_config_test.cpp.
#include "convert/hf_config.h"

#include <nlohmann/json.hpp>

#include <limits>

namespace gufo::convert {
namespace {

using nlohmann::json;

// NOTE(convert): generous caps: the largest real models are ~1/10 of these. They keep a
// corrupt config from sizing huge allocations or overflowing shape products.
constexpr uint64_t kMaxDim = 1u << 20;
constexpr uint64_t kMaxVocab = 4'000'000;  // the tokenizer importer's cap on ids
constexpr uint64_t kMaxLayers = 4096;
constexpr uint64_t kMaxExperts = 4096;

class Fields {
 public:
  Fields(const json& obj, std::string prefix) : obj_(obj), prefix_(std::move(prefix)) {}

  bool has(const char* key) const {
    const auto it = obj_.find(key);
    return it != obj_.end() && !it->is_null();
  }

  Result<uint32_t> u32(const char* key, uint64_t max, std::optional<uint32_t> fallback = {}) const {
    const auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) {
      if (fallback) return *fallback;
      return Error{prefix_ + key + ": missing"};
    }
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || static_cast<uint64_t>(it->get<int64_t>()) > max) {
      return Error{prefix_ + key + ": expected an integer from 1 to " + std::to_string(max) + ", found " + it->dump()};
    }
    return static_cast<uint32_t>(it->get<int64_t>());
  }

  Result<std::optional<double>> number(const char* key) const {
    const auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return std::optional<double>();
    if (!it->is_number()) return Error{prefix_ + key + ": expected a number, found " + it->dump()};
    return std::optional<double>(it->get<double>());
  }

  Result<bool> boolean(const char* key, bool fallback) const {
    const auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) return Error{prefix_ + key + ": expected true or false, found " + it->dump()};
    return it->get<bool>();
  }

 private:
  const json& obj_;
  std::string prefix_;
};

Result<RopeScaling> parse_rope(const json& config, const std::string& name, std::optional<double>& rope_theta) {
  RopeScaling rope;
  // transformers 5 folds rope_theta and the scaling into rope_parameters; 4.x has a
  // top-level rope_theta and an optional rope_scaling.
  const json* params = nullptr;
  std::string where;
  for (const char* key : {"rope_parameters", "rope_scaling"}) {
    const auto it = config.find(key);
    if (it != config.end() && !it->is_null()) {
      if (!it->is_object()) return Error{name + ": " + key + ": expected an object or null"};
      params = &*it;
      where = name + ": " + key + ".";
      break;
    }
  }
  if (params == nullptr) return rope;
  if (params->contains("full_attention")) {
    return Error{where + "full_attention: per-layer-type rope parameters are not supported"};
  }
  const Fields fields(*params, where);
  GUFO_ASSIGN_OR_RETURN(std::optional<double> theta, fields.number("rope_theta"));
  if (theta) rope_theta = theta;

  std::string type;
  for (const char* key : {"rope_type", "type"}) {  // "type" is the pre-4.45 spelling
    const auto it = params->find(key);
    if (it != params->end() && it->is_string()) {
      type = it->get<std::string>();
      break;
    }
  }
  for (char& c : type) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  GUFO_ASSIGN_OR_RETURN(std::optional<double> factor, fields.number("factor"));
  if (type.empty() || type == "default") return rope;
  if (type != "linear" && type != "yarn" && type != "llama3") {
    return Error{where + "rope_type: '" + type + "' is not supported (supported: default, linear, yarn, llama3)"};
  }
  rope.type = type;
  if (factor) {
    if (!(*factor > 0) || *factor > 1e6)
      return Error{where + "factor: must be positive, found " + std::to_string(*factor)};
    rope.factor = *factor;
  } else if (type == "llama3") {
    rope.factor = 8.0;  // llama.cpp's fallback in LlamaModel.generate_extra_tensors
  } else {
    return Error{where + "factor: missing (needed for rope_type " + type + ")"};
  }
  GUFO_ASSIGN_OR_RETURN(std::optional<double> low, fields.number("low_freq_factor"));
  GUFO_ASSIGN_OR_RETURN(std::optional<double> high, fields.number("high_freq_factor"));
  if (low) rope.low_freq_factor = *low;
  if (high) rope.high_freq_factor = *high;
  if (type == "llama3" && !(rope.low_freq_factor > 0 && rope.high_freq_factor > rope.low_freq_factor)) {
    return Error{where + "low_freq_factor/high_freq_factor: need 0 < low < high, found " +
                 std::to_string(rope.low_freq_factor) + " and " + std::to_string(rope.high_freq_factor)};
  }
  if (fields.has("original_max_position_embeddings")) {
    GUFO_ASSIGN_OR_RETURN(uint32_t original, fields.u32("original_max_position_embeddings", 1u << 30));
    rope.original_max_position_embeddings = original;
  } else if (type == "yarn") {
    return Error{where + "original_max_position_embeddings: missing (needed for rope_type yarn)"};
  }
  GUFO_ASSIGN_OR_RETURN(rope.extrapolation_factor, fields.number("extrapolation_factor"));
  GUFO_ASSIGN_OR_RETURN(rope.attention_factor, fields.number("attention_factor"));
  if (!rope.attention_factor) {
    GUFO_ASSIGN_OR_RETURN(rope.attention_factor, fields.number("attn_factor"));
  }
  GUFO_ASSIGN_OR_RETURN(rope.beta_fast, fields.number("beta_fast"));
  GUFO_ASSIGN_OR_RETURN(rope.beta_slow, fields.number("beta_slow"));
  return rope;
}

}  // namespace

Result<HfConfig> parse_hf_config(const json& config, const std::string& name) {
  if (!config.is_object()) return Error{name + ": expected a JSON object at the top"};
  HfConfig out;
  const auto archs = config.find("architectures");
  if (archs == config.end() || !archs->is_array() || archs->empty() || !(*archs)[0].is_string()) {
    return Error{name + ": architectures: expected a list with the model class, e.g. [\"Qwen3ForCausalLM\"]"};
  }
  out.hf_arch = (*archs)[0].get<std::string>();
  if (out.hf_arch == "Qwen3ForCausalLM") {
    out.arch = Arch::Qwen3;
    out.gguf_arch = "qwen3";
  } else if (out.hf_arch == "Qwen3MoeForCausalLM") {
    out.arch = Arch::Qwen3Moe;
    out.gguf_arch = "qwen3moe";
  } else if (out.hf_arch == "LlamaForCausalLM") {
    out.arch = Arch::Llama;
    out.gguf_arch = "llama";
  } else if (out.hf_arch == "Qwen2ForCausalLM") {
    out.arch = Arch::Qwen2;
    out.gguf_arch = "qwen2";
  } else {
    return Error{name + ": architecture " + out.hf_arch +
                 " is not supported (supported: Qwen3ForCausalLM, Qwen3MoeForCausalLM, "
                 "LlamaForCausalLM, Qwen2ForCausalLM)"};
  }

  const Fields fields(config, name + ": ");
  GUFO_ASSIGN_OR_RETURN(out.n_vocab, fields.u32("vocab_size", kMaxVocab));
  GUFO_ASSIGN_OR_RETURN(out.n_embd, fields.u32("hidden_size", kMaxDim));
  GUFO_ASSIGN_OR_RETURN(out.n_layer, fields.u32("num_hidden_layers", kMaxLayers));
  GUFO_ASSIGN_OR_RETURN(out.n_ff, fields.u32("intermediate_size", kMaxDim));
  GUFO_ASSIGN_OR_RETURN(out.n_head, fields.u32("num_attention_heads", kMaxDim));
  // transformers: num_key_value_heads defaults to num_attention_heads (no GQA).
  GUFO_ASSIGN_OR_RETURN(out.n_head_kv, fields.u32("num_key_value_heads", kMaxDim, out.n_head));
  if (out.n_head % out.n_head_kv != 0) {
    return Error{name + ": num_attention_heads " + std::to_string(out.n_head) +
                 " is not a multiple of num_key_value_heads " + std::to_string(out.n_head_kv)};
  }
  out.head_dim_in_config = fields.has("head_dim");
  if (out.head_dim_in_config) {
    GUFO_ASSIGN_OR_RETURN(out.head_dim, fields.u32("head_dim", kMaxDim));
  } else {
    if (out.n_embd % out.n_head != 0) {
      return Error{name + ": hidden_size " + std::to_string(out.n_embd) + " is not a multiple of num_attention_heads " +
                   std::to_string(out.n_head) + " (and there is no head_dim)"};
    }
    out.head_dim = out.n_embd / out.n_head;
  }
  // RoPE rotates pairs, and the llama Q/K permutation splits each head in two halves.
  if (out.head_dim % 2 != 0) {
    return Error{name + ": head_dim " + std::to_string(out.head_dim) + " must be even for RoPE"};
  }
  if (static_cast<uint64_t>(out.n_head) * out.head_dim > kMaxDim) {
    return Error{name + ": num_attention_heads * head_dim is beyond " + std::to_string(kMaxDim)};
  }
  if (fields.has("max_position_embeddings")) {
    GUFO_ASSIGN_OR_RETURN(uint32_t n_ctx, fields.u32("max_position_embeddings", 1u << 30));
    out.n_ctx_train = n_ctx;
  }
  GUFO_ASSIGN_OR_RETURN(out.rope_theta, fields.number("rope_theta"));
  GUFO_ASSIGN_OR_RETURN(out.rms_norm_eps, fields.number("rms_norm_eps"));
  if (out.rms_norm_eps && !(*out.rms_norm_eps > 0 && *out.rms_norm_eps < 1)) {
    return Error{name + ": rms_norm_eps: expected a small positive number, found " + std::to_string(*out.rms_norm_eps)};
  }
  GUFO_ASSIGN_OR_RETURN(out.rope_scaling, parse_rope(config, name, out.rope_theta));
  if (out.rope_theta && !(*out.rope_theta > 0)) {
    return Error{name + ": rope_theta: expected a positive number, found " + std::to_string(*out.rope_theta)};
  }
  // NOTE(convert): all four config classes default tie_word_embeddings to false.
  GUFO_ASSIGN_OR_RETURN(out.tie_word_embeddings, fields.boolean("tie_word_embeddings", false));
  // Qwen2 always has q/k/v biases (hard-coded in modeling_qwen2.py); the others only with
  // attention_bias (default false).
  GUFO_ASSIGN_OR_RETURN(out.attention_bias, fields.boolean("attention_bias", false));
  if (out.arch == Arch::Qwen2) out.attention_bias = true;

  if (out.arch == Arch::Qwen3Moe) {
    // transformers 5 writes num_local_experts (its configs map num_experts onto it); the Hub's
    // configs and transformers 4.x write num_experts.
    const bool local = fields.has("num_local_experts");
    GUFO_ASSIGN_OR_RETURN(out.n_expert, fields.u32(local ? "num_local_experts" : "num_experts", kMaxExperts));
    if (local && fields.has("num_experts")) {
      GUFO_ASSIGN_OR_RETURN(uint32_t hub, fields.u32("num_experts", kMaxExperts));
      if (hub != out.n_expert) {
        return Error{name + ": num_experts " + std::to_string(hub) + " and num_local_experts " +
                     std::to_string(out.n_expert) + " disagree"};
      }
    }
    GUFO_ASSIGN_OR_RETURN(out.n_expert_used, fields.u32("num_experts_per_tok", kMaxExperts));
    GUFO_ASSIGN_OR_RETURN(out.n_ff_exp, fields.u32("moe_intermediate_size", kMaxDim));
    GUFO_ASSIGN_OR_RETURN(out.norm_topk_prob, fields.boolean("norm_topk_prob", false));
    if (out.n_expert_used > out.n_expert) {
      return Error{name + ": num_experts_per_tok " + std::to_string(out.n_expert_used) + " is more than " +
                   (local ? "num_local_experts " : "num_experts ") + std::to_string(out.n_expert)};
    }
    // Every layer must be sparse: llama.cpp's qwen3moe has no dense layers.
    GUFO_ASSIGN_OR_RETURN(uint32_t sparse_step, fields.u32("decoder_sparse_step", 1u << 20, 1u));
    const auto dense = config.find("mlp_only_layers");
    const bool has_dense = dense != config.end() && dense->is_array() && !dense->empty();
    if (sparse_step != 1 || has_dense) {
      return Error{name +
                   ": decoder_sparse_step/mlp_only_layers: dense layers in a Qwen3-MoE "
                   "model are not supported (qwen3moe has an MoE FFN in every layer)"};
    }
  }
  return out;
}

}  // namespace gufo::convert
