// config.json of a Hugging Face causal LM -> the hyper-parameters a GGUF file records, for
// the architectures Gufo converts (Qwen3, Qwen3-MoE, Llama, Qwen2), with llama.cpp's
// GGUF architecture names. Every number is range-checked before anything is sized from it.
// Tested by tests/unit/convert/hf_config_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/result.h"

namespace gufo::convert {

enum class Arch { Llama, Qwen2, Qwen3, Qwen3Moe };

// rope_scaling (transformers <= 4.x) or rope_parameters (5.x), normalised.
struct RopeScaling {
  std::string type;  // "" (none/default), "linear", "yarn", "llama3"
  double factor = 1.0;
  // llama3: the transformers defaults (modeling_rope_utils._compute_llama3_parameters
  // requires them; llama.cpp's converter uses the same fallbacks)
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::optional<uint64_t> original_max_position_embeddings;
  // yarn extras, written only when the config has them (as llama.cpp does)
  std::optional<double> extrapolation_factor;
  std::optional<double> attention_factor;
  std::optional<double> beta_fast;
  std::optional<double> beta_slow;
};

struct HfConfig {
  Arch arch = Arch::Llama;
  std::string hf_arch;    // "Qwen3ForCausalLM", ...
  std::string gguf_arch;  // "qwen3", "qwen3moe", "llama", "qwen2"

  uint32_t n_vocab = 0;
  uint32_t n_embd = 0;
  uint32_t n_layer = 0;
  uint32_t n_ff = 0;
  uint32_t n_head = 0;
  uint32_t n_head_kv = 0;
  uint32_t head_dim = 0;                // config head_dim, else n_embd / n_head
  bool head_dim_in_config = false;      // llama.cpp writes key_length/value_length only then
  std::optional<uint64_t> n_ctx_train;  // max_position_embeddings
  std::optional<double> rope_theta;
  std::optional<double> rms_norm_eps;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // q/k/v biases present (always for qwen2)

  // qwen3moe
  uint32_t n_expert = 0;
  uint32_t n_expert_used = 0;
  uint32_t n_ff_exp = 0;
  bool norm_topk_prob = false;
};

// Parses and validates config.json's object; errors start with `name` and name the field.
Result<HfConfig> parse_hf_config(const nlohmann::json& config, const std::string& name);

}  // namespace gufo::convert
