// The per-tensor type mix against expectations derived by hand from llama.cpp's rules
// (src/llama-quant.cpp): use_more_bits layers, output/tied embeddings, fallbacks, MoE and
// 70B bumps, tensors never quantized. Run: ctest --preset unit -R quantize_test
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "quantize/type_mix.h"

namespace gufo::quantize {
namespace {

std::set<int> more_bits_layers(int n_layer) {
  std::set<int> layers;
  for (int layer_idx = 0; layer_idx < n_layer; ++layer_idx) {
    if (use_more_bits(layer_idx, n_layer)) layers.insert(layer_idx);
  }
  return layers;
}

TEST(TypeMix, UseMoreBitsLayers) {
  // n/8 = 3, 7n/8 = 24; in between every third layer starting at n/8 + 2.
  EXPECT_EQ(more_bits_layers(28), (std::set<int>{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27}));
  // n/8 = 4, 7n/8 = 28.
  EXPECT_EQ(more_bits_layers(32), (std::set<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31}));
  // n/8 = 4, 7n/8 = 31 (integer division).
  EXPECT_EQ(more_bits_layers(36), (std::set<int>{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35}));
}

DType type_of(QuantMix mix, const ModelFacts& model, const std::string& name, std::vector<uint64_t> shape,
              DType source = DType::F32) {
  return choose_tensor_type(mix, model, name, shape, source);
}

TEST(TypeMix, Q4KMTiedQwen3) {
  const ModelFacts model{.n_layer = 28, .n_expert = 0, .has_output = false, .is_70b_class = false};
  const QuantMix mix = QuantMix::Q4_K_M;
  EXPECT_EQ(type_of(mix, model, "token_embd.weight", {1024, 151936}), DType::Q6_K);  // tied
  for (int layer_idx = 0; layer_idx < 28; ++layer_idx) {
    const std::string blk = "blk." + std::to_string(layer_idx) + ".";
    const DType more = use_more_bits(layer_idx, 28) ? DType::Q6_K : DType::Q4_K;
    EXPECT_EQ(type_of(mix, model, blk + "attn_v.weight", {1024, 1024}), more) << layer_idx;
    EXPECT_EQ(type_of(mix, model, blk + "ffn_down.weight", {3072, 1024}), more) << layer_idx;
    EXPECT_EQ(type_of(mix, model, blk + "attn_q.weight", {1024, 2048}), DType::Q4_K);
    EXPECT_EQ(type_of(mix, model, blk + "attn_k.weight", {1024, 1024}), DType::Q4_K);
    EXPECT_EQ(type_of(mix, model, blk + "attn_output.weight", {2048, 1024}), DType::Q4_K);
    EXPECT_EQ(type_of(mix, model, blk + "ffn_gate.weight", {1024, 3072}), DType::Q4_K);
    EXPECT_EQ(type_of(mix, model, blk + "ffn_up.weight", {1024, 3072}), DType::Q4_K);
    EXPECT_EQ(type_of(mix, model, blk + "attn_norm.weight", {1024}), DType::F32);
    EXPECT_EQ(type_of(mix, model, blk + "attn_q_norm.weight", {128}), DType::F32);
  }
  EXPECT_EQ(type_of(mix, model, "blk.3.attn_v.weight", {1024, 1024}), DType::Q4_K);
  EXPECT_EQ(type_of(mix, model, "blk.5.attn_v.weight", {1024, 1024}), DType::Q6_K);
  EXPECT_EQ(type_of(mix, model, "output_norm.weight", {1024}), DType::F32);
}

TEST(TypeMix, UntiedOutputAndEmbedding) {
  const ModelFacts model{.n_layer = 32, .n_expert = 0, .has_output = true, .is_70b_class = false};
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "token_embd.weight", {4096, 128256}), DType::Q4_K);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "output.weight", {4096, 128256}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, model, "token_embd.weight", {4096, 128256}), DType::Q5_K);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, model, "output.weight", {4096, 128256}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, model, "blk.4.attn_v.weight", {4096, 1024}), DType::Q5_K);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, model, "blk.6.ffn_down.weight", {14336, 4096}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q6_K, model, "token_embd.weight", {4096, 128256}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q6_K, model, "output.weight", {4096, 128256}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q6_K, model, "blk.4.attn_v.weight", {4096, 1024}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q8_0, model, "output.weight", {4096, 128256}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q8_0, model, "blk.0.ffn_down.weight", {14336, 4096}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q8_0, model, "rope_freqs.weight", {32}), DType::F32);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.0.attn_qkv.weight", {4096, 6144}), DType::Q5_K);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, model, "blk.0.attn_qkv.weight", {4096, 6144}), DType::Q6_K);
}

TEST(TypeMix, NotQuantizedKeepsSourceType) {
  const ModelFacts model{.n_layer = 4, .n_expert = 0, .has_output = true, .is_70b_class = false};
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.0.attn_norm.weight", {256}, DType::F16), DType::F16);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.0.attn_q.bias", {256}), DType::F32);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.0.ffn_gate_inp.weight", {256, 64}), DType::F32);
  // A 2-D tensor with a trailing extent of 1 is 1-D for ggml_n_dims.
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.0.attn_q.weight", {256, 1}), DType::F32);
}

TEST(TypeMix, ShapeFallback) {
  const ModelFacts model{.n_layer = 8, .n_expert = 0, .has_output = true, .is_70b_class = false};
  // llama.cpp: Q4_K -> Q5_0, Q6_K -> Q8_0; Gufo takes Q8_0 for every K-quant when ne0 % 32 == 0.
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.1.ffn_down.weight", {4000, 256}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.0.ffn_down.weight", {4000, 256}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, model, "blk.1.ffn_up.weight", {288, 256}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "output.weight", {4000, 256}), DType::Q8_0);
  // ...and F16 when not even 32 divides ne0.
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, model, "blk.1.ffn_down.weight", {100, 256}), DType::F16);
  EXPECT_EQ(type_of(QuantMix::Q8_0, model, "blk.1.ffn_down.weight", {100, 256}), DType::F16);
  EXPECT_EQ(type_of(QuantMix::Q6_K, model, "output.weight", {100, 256}), DType::F16);
}

TEST(TypeMix, ExpertAnd70bBumps) {
  const ModelFacts moe8{.n_layer = 32, .n_expert = 8, .has_output = true, .is_70b_class = false};
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, moe8, "blk.3.attn_v.weight", {4096, 1024}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, moe8, "blk.3.attn_k.weight", {4096, 1024}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q6_K, moe8, "blk.3.attn_k.weight", {4096, 1024}), DType::Q8_0);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, moe8, "blk.3.attn_output.weight", {4096, 4096}), DType::Q5_K);
  EXPECT_EQ(type_of(QuantMix::Q5_K_M, moe8, "blk.3.attn_output.weight", {4096, 4096}), DType::Q5_K);
  // MoE expert stacks are ffn_down* too, by layer number.
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, moe8, "blk.0.ffn_down_exps.weight", {14336, 4096, 8}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, moe8, "blk.4.ffn_down_exps.weight", {14336, 4096, 8}), DType::Q4_K);

  EXPECT_TRUE(is_70b_class("llama", 80, 64, 8));
  EXPECT_FALSE(is_70b_class("llama", 80, 64, 64));  // LLaMA-65B
  EXPECT_TRUE(is_70b_class("qwen2", 80, 64, 8));
  EXPECT_FALSE(is_70b_class("qwen3", 64, 64, 8));
  const ModelFacts big{.n_layer = 80, .n_expert = 0, .has_output = true, .is_70b_class = true};
  // n/8 = 10: layers 10 and 11 are not more-bits layers (Q4_K raised to Q5_K); 9 and 12 are.
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, big, "blk.10.attn_v.weight", {8192, 1024}), DType::Q5_K);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, big, "blk.11.attn_v.weight", {8192, 1024}), DType::Q5_K);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, big, "blk.9.attn_v.weight", {8192, 1024}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, big, "blk.12.attn_v.weight", {8192, 1024}), DType::Q6_K);
  EXPECT_EQ(type_of(QuantMix::Q4_K_M, big, "blk.11.attn_q.weight", {8192, 8192}), DType::Q4_K);
}

TEST(TypeMix, NamesAndFileTypes) {
  EXPECT_EQ(parse_quant_mix("Q4_K_M"), QuantMix::Q4_K_M);
  EXPECT_EQ(parse_quant_mix("q5_k_m"), QuantMix::Q5_K_M);
  EXPECT_EQ(parse_quant_mix("q6_k"), QuantMix::Q6_K);
  EXPECT_EQ(parse_quant_mix("q8_0"), QuantMix::Q8_0);
  EXPECT_FALSE(parse_quant_mix("q4_0").has_value());
  EXPECT_FALSE(parse_quant_mix("q4_k").has_value());
  EXPECT_EQ(quant_mix_file_type(QuantMix::Q8_0), 7u);
  EXPECT_EQ(quant_mix_file_type(QuantMix::Q4_K_M), 15u);
  EXPECT_EQ(quant_mix_file_type(QuantMix::Q5_K_M), 17u);
  EXPECT_EQ(quant_mix_file_type(QuantMix::Q6_K), 18u);
  EXPECT_EQ(output_file_type(*parse_output_type("f32")), 0u);
  EXPECT_EQ(output_file_type(*parse_output_type("F16")), 1u);
  EXPECT_EQ(output_file_type(*parse_output_type("bf16")), 32u);
  EXPECT_EQ(output_file_type(*parse_output_type("q4_k_m")), 15u);
  EXPECT_FALSE(parse_output_type("q2_k").has_value());
  // Plain output types follow convert: 1-D and norms F32, matrices the type.
  const ModelFacts model{.n_layer = 2, .n_expert = 0, .has_output = false, .is_70b_class = false};
  const std::vector<uint64_t> norm = {1024};
  const std::vector<uint64_t> matrix = {1024, 2048};
  EXPECT_EQ(choose_output_tensor_type(*parse_output_type("bf16"), model, "blk.0.attn_norm.weight", norm), DType::F32);
  EXPECT_EQ(choose_output_tensor_type(*parse_output_type("bf16"), model, "blk.0.attn_q.weight", matrix), DType::BF16);
}

}  // namespace
}  // namespace gufo::quantize
