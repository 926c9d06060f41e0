// config.json parsing: the four architectures, defaults (n_head_kv, head_dim, tie), rope
// scaling and the expert count in both spellings, and bad fields as one-line errors naming the field.
// Run: ctest --preset unit -R convert_test
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "convert/hf_config.h"

namespace gufo::convert {
namespace {

using nlohmann::json;

json base_config(const char* arch) {
  return {{"architectures", {arch}}, {"vocab_size", 100},        {"hidden_size", 64},
          {"num_hidden_layers", 2},  {"intermediate_size", 128}, {"num_attention_heads", 4}};
}

TEST(HfConfig, ArchitecturesAndDefaults) {
  auto llama = parse_hf_config(base_config("LlamaForCausalLM"), "config.json");
  ASSERT_TRUE(llama.ok()) << llama.error().message;
  EXPECT_EQ(llama->gguf_arch, "llama");
  EXPECT_EQ(llama->n_head_kv, 4u);  // defaults to n_head
  EXPECT_EQ(llama->head_dim, 16u);  // hidden_size / n_head
  EXPECT_FALSE(llama->head_dim_in_config);
  EXPECT_FALSE(llama->tie_word_embeddings);
  EXPECT_FALSE(llama->attention_bias);
  auto qwen2 = parse_hf_config(base_config("Qwen2ForCausalLM"), "config.json");
  ASSERT_TRUE(qwen2.ok());
  EXPECT_EQ(qwen2->gguf_arch, "qwen2");
  EXPECT_TRUE(qwen2->attention_bias);
  json qwen3_json = base_config("Qwen3ForCausalLM");
  qwen3_json["head_dim"] = 32;
  auto qwen3 = parse_hf_config(qwen3_json, "config.json");
  ASSERT_TRUE(qwen3.ok());
  EXPECT_EQ(qwen3->gguf_arch, "qwen3");
  EXPECT_EQ(qwen3->head_dim, 32u);
  EXPECT_TRUE(qwen3->head_dim_in_config);
  json moe_json = base_config("Qwen3MoeForCausalLM");
  moe_json.update({{"num_experts", 8},
                   {"num_experts_per_tok", 2},
                   {"moe_intermediate_size", 32},
                   {"mlp_only_layers", json::array()},
                   {"decoder_sparse_step", 1}});
  auto moe = parse_hf_config(moe_json, "config.json");
  ASSERT_TRUE(moe.ok()) << moe.error().message;
  EXPECT_EQ(moe->gguf_arch, "qwen3moe");
  EXPECT_EQ(moe->n_expert, 8u);
  EXPECT_EQ(moe->n_ff_exp, 32u);
}

// The expert count as transformers 4.x and the Hub's configs write it (num_experts) and as
// transformers 5 saves it (num_local_experts); both at once must agree.
TEST(HfConfig, ExpertCountSpellings) {
  json moe = base_config("Qwen3MoeForCausalLM");
  moe.update({{"num_experts_per_tok", 2}, {"moe_intermediate_size", 32}});
  json v5 = moe;
  v5["num_local_experts"] = 16;
  auto parsed = parse_hf_config(v5, "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->n_expert, 16u);
  v5["num_experts"] = 16;
  parsed = parse_hf_config(v5, "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->n_expert, 16u);
  v5["num_experts"] = 8;
  parsed = parse_hf_config(v5, "m/config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message, "m/config.json: num_experts 8 and num_local_experts 16 disagree");
  v5.erase("num_experts");
  v5["num_local_experts"] = 0;
  parsed = parse_hf_config(v5, "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("num_local_experts: expected an integer"), std::string::npos);
}

TEST(HfConfig, RopeScalingSpellings) {
  json config = base_config("LlamaForCausalLM");
  config["rope_theta"] = 500000.0;
  config["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 8192}};
  auto parsed = parse_hf_config(config, "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->rope_scaling.type, "llama3");
  EXPECT_EQ(*parsed->rope_theta, 500000.0);
  EXPECT_EQ(*parsed->rope_scaling.original_max_position_embeddings, 8192u);
  // transformers 5: rope_parameters carries rope_theta too.
  config.erase("rope_scaling");
  config.erase("rope_theta");
  config["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 1000000.0}};
  parsed = parse_hf_config(config, "config.json");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->rope_scaling.type, "");
  EXPECT_EQ(*parsed->rope_theta, 1000000.0);
  // The old "type" key.
  config["rope_parameters"] = {{"type", "linear"}, {"factor", 2.0}};
  parsed = parse_hf_config(config, "config.json");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->rope_scaling.type, "linear");
  EXPECT_EQ(parsed->rope_scaling.factor, 2.0);
}

TEST(HfConfig, Errors) {
  struct Case {
    json patch;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {{{"architectures", {"GPT2LMHeadModel"}}}, "architecture GPT2LMHeadModel is not supported"},
      {{{"architectures", nullptr}}, "architectures: expected a list"},
      {{{"hidden_size", nullptr}}, "hidden_size: missing"},
      {{{"hidden_size", -3}}, "hidden_size: expected an integer from 1 to"},
      {{{"vocab_size", "many"}}, "vocab_size: expected an integer"},
      {{{"num_key_value_heads", 3}}, "num_attention_heads 4 is not a multiple of num_key_value_heads 3"},
      {{{"hidden_size", 66}}, "hidden_size 66 is not a multiple of num_attention_heads 4"},
      {{{"head_dim", 15}}, "head_dim 15 must be even"},
      {{{"rms_norm_eps", -1.0}}, "rms_norm_eps: expected a small positive number"},
      {{{"tie_word_embeddings", "yes"}}, "tie_word_embeddings: expected true or false"},
      {{{"rope_scaling", {{"rope_type", "dynamic"}, {"factor", 2.0}}}}, "rope_type: 'dynamic' is not supported"},
      {{{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 2.0}}}},
       "original_max_position_embeddings: missing (needed for rope_type yarn)"},
      {{{"rope_scaling", 5}}, "rope_scaling: expected an object or null"},
  };
  for (const Case& bad : cases) {
    json config = base_config("LlamaForCausalLM");
    config.update(bad.patch);
    auto parsed = parse_hf_config(config, "m/config.json");
    ASSERT_FALSE(parsed.ok()) << bad.patch.dump();
    EXPECT_EQ(parsed.error().message.rfind("m/config.json: ", 0), 0u) << parsed.error().message;
    EXPECT_NE(parsed.error().message.find(bad.expected), std::string::npos) << parsed.error().message;
  }
  json moe = base_config("Qwen3MoeForCausalLM");
  moe.update({{"num_experts", 8}, {"num_experts_per_tok", 2}, {"moe_intermediate_size", 32}, {"mlp_only_layers", {0}}});
  auto parsed = parse_hf_config(moe, "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("dense layers"), std::string::npos);
  moe.erase("mlp_only_layers");
  moe.erase("num_experts");
  parsed = parse_hf_config(moe, "config.json");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message.find("num_experts: missing"), std::string::npos);
}

}  // namespace
}  // namespace gufo::convert
