// The synth shape table (see synth_shapes.h). NOTE(synth): the numbers are copied from the
// config.json files of the Hugging Face repositories named in each row; rope_scaling of the
// Llama 3.1/3.2 models is their llama3 scaling (turned into rope_freqs.weight by convert).
// Tested by tests/unit/quantize/synth_test.cpp.
#include "quantize/synth_shapes.h"

#include <nlohmann/json.hpp>

#include <array>
#include <string>

namespace gufo::quantize {
namespace {

constexpr std::array<SynthShape, 8> kShapes = {{
    {"qwen3", "0.6b", "Qwen/Qwen3-0.6B", R"({
      "architectures": ["Qwen3ForCausalLM"], "hidden_size": 1024, "intermediate_size": 3072,
      "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
      "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": true,
      "rope_theta": 1000000, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
      "attention_bias": false})"},
    {"qwen3", "1.7b", "Qwen/Qwen3-1.7B", R"({
      "architectures": ["Qwen3ForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
      "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
      "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": true,
      "rope_theta": 1000000, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
      "attention_bias": false})"},
    {"qwen3", "8b", "Qwen/Qwen3-8B", R"({
      "architectures": ["Qwen3ForCausalLM"], "hidden_size": 4096, "intermediate_size": 12288,
      "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": false,
      "rope_theta": 1000000, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
      "attention_bias": false})"},
    {"qwen3", "32b", "Qwen/Qwen3-32B", R"({
      "architectures": ["Qwen3ForCausalLM"], "hidden_size": 5120, "intermediate_size": 25600,
      "num_hidden_layers": 64, "num_attention_heads": 64, "num_key_value_heads": 8,
      "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": false,
      "rope_theta": 1000000, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
      "attention_bias": false})"},
    {"qwen3moe", "30b-a3b", "Qwen/Qwen3-30B-A3B", R"({
      "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 2048, "intermediate_size": 6144,
      "num_hidden_layers": 48, "num_attention_heads": 32, "num_key_value_heads": 4,
      "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": false,
      "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
      "attention_bias": false, "num_experts": 128, "num_experts_per_tok": 8,
      "moe_intermediate_size": 768, "norm_topk_prob": true})"},
    // NOTE(synth): no checkpoint has this shape: Qwen3-30B-A3B at half the width, half the
    // layers and half the experts, for MoE measurements that fit small machines and CI.
    {"qwen3moe", "small", "Qwen3-30B-A3B scaled down (synthetic)", R"({
      "architectures": ["Qwen3MoeForCausalLM"], "hidden_size": 1024, "intermediate_size": 3072,
      "num_hidden_layers": 24, "num_attention_heads": 16, "num_key_value_heads": 4,
      "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": false,
      "rope_theta": 1000000.0, "rms_norm_eps": 1e-06, "max_position_embeddings": 40960,
      "attention_bias": false, "num_experts": 64, "num_experts_per_tok": 8,
      "moe_intermediate_size": 384, "norm_topk_prob": true})"},
    {"llama", "1b", "meta-llama/Llama-3.2-1B", R"({
      "architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
      "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
      "head_dim": 64, "vocab_size": 128256, "tie_word_embeddings": true,
      "rope_theta": 500000.0, "rms_norm_eps": 1e-05, "max_position_embeddings": 131072,
      "attention_bias": false,
      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"}})"},
    {"llama", "8b", "meta-llama/Llama-3.1-8B", R"({
      "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
      "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
      "vocab_size": 128256, "tie_word_embeddings": false,
      "rope_theta": 500000.0, "rms_norm_eps": 1e-05, "max_position_embeddings": 131072,
      "attention_bias": false,
      "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"}})"},
}};

}  // namespace

std::span<const SynthShape> synth_shapes() { return kShapes; }

Result<convert::HfConfig> synth_config(std::string_view arch, std::string_view shape) {
  std::string known;
  for (const SynthShape& candidate : kShapes) {
    if (candidate.arch == arch && candidate.shape == shape) {
      const nlohmann::json config = nlohmann::json::parse(candidate.config_json);
      return convert::parse_hf_config(config, std::string(candidate.hf_model) + " config.json");
    }
    known += (known.empty() ? "" : ", ") + std::string(candidate.arch) + " " + std::string(candidate.shape);
  }
  return Error{"synth: unknown --arch/--shape '" + std::string(arch) + "' '" + std::string(shape) +
               "' (known: " + known + ")"};
}

}  // namespace gufo::quantize
