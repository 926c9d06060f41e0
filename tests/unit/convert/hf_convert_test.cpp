// End-to-end HF -> GGUF conversion of tiny folders written by the test (qwen3 tied, llama
// with llama3 rope scaling and GQA, qwen2 with biases, qwen3moe), checked tensor by tensor
// (names, ggml shapes, types per outtype, values, the Q/K permutation) and key by key; bad
// folders give one-line errors and leave no file; the CLI; and tests/data/models/* if present.
// Run: ctest --preset unit -R convert_test
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "convert/hf_convert.h"
#include "convert/tensor_transform.h"
#include "gguf/file.h"
#include "quant/quant.h"
#include "tiny_hf_model.h"

namespace gufo::convert {
namespace {

using testing::json;
using testing::TensorMap;
using testing::TinyShape;

class HfConvert : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("gufo_convert_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
    dir_ = root_ / "tiny-model";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // Converts dir_ in memory and parses the result.
  void convert(DType outtype) {
    auto conversion = prepare_hf_conversion(dir_.string(), outtype);
    ASSERT_TRUE(conversion.ok()) << conversion.error().message;
    auto bytes = conversion->writer.to_bytes("out.gguf");
    ASSERT_TRUE(bytes.ok()) << bytes.error().message;
    bytes_ = std::move(bytes).value();
    auto file = gguf::File::parse(bytes_, "out.gguf");
    ASSERT_TRUE(file.ok()) << file.error().message;
    file_ = std::make_unique<gguf::File>(std::move(file).value());
  }

  const gguf::TensorInfo& tensor(const std::string& name) {
    const gguf::TensorInfo* info = file_->find_tensor(name);
    EXPECT_NE(info, nullptr) << name;
    static const gguf::TensorInfo empty;
    return info ? *info : empty;
  }

  std::vector<float> values(const std::string& name) {
    const gguf::TensorInfo& info = tensor(name);
    std::vector<float> out(info.n_elements);
    const uint64_t row = info.ne[0];
    const uint64_t row_bytes = dtype_row_bytes(dtype_info(info.type), row);
    for (uint64_t r = 0; r < info.n_elements / row; ++r) {
      EXPECT_TRUE(quant::dequantize_row(info.type, info.data + r * row_bytes, row_bytes, out.data() + r * row,
                                        static_cast<int64_t>(row))
                      .ok());
    }
    return out;
  }

  // Converts dir_ to a file and expects failure with `expected` in a one-line message and
  // nothing left behind.
  void expect_error(const std::string& expected, DType outtype = DType::F16) {
    const std::string out = (root_ / "out.gguf").string();
    Status status = convert_hf_model(dir_.string(), out, outtype);
    ASSERT_FALSE(status.ok()) << "expected: " << expected;
    EXPECT_NE(status.error().message.find(expected), std::string::npos) << status.error().message;
    EXPECT_EQ(status.error().message.find('\n'), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  }

  std::filesystem::path root_;
  std::filesystem::path dir_;
  std::vector<std::byte> bytes_;
  std::unique_ptr<gguf::File> file_;
};

TEST_F(HfConvert, Qwen3TiedF32) {
  auto [config, tensors] = testing::tiny_model("Qwen3ForCausalLM");
  testing::write_folder(dir_, config, tensors);
  convert(DType::F32);

  EXPECT_EQ(file_->get_string("general.architecture").value(), "qwen3");
  EXPECT_EQ(file_->get_string("general.type").value(), "model");
  EXPECT_EQ(file_->get_string("general.name").value(), "tiny-model");
  EXPECT_EQ(file_->get_u32("general.file_type").value(), 0u);
  EXPECT_EQ(file_->get_u32("general.alignment").value(), 32u);
  EXPECT_EQ(file_->get_u32("qwen3.block_count").value(), 2u);
  EXPECT_EQ(file_->get_u32("qwen3.context_length").value(), 512u);
  EXPECT_EQ(file_->get_u32("qwen3.embedding_length").value(), 64u);
  EXPECT_EQ(file_->get_u32("qwen3.feed_forward_length").value(), 96u);
  EXPECT_EQ(file_->get_u32("qwen3.attention.head_count").value(), 4u);
  EXPECT_EQ(file_->get_u32("qwen3.attention.head_count_kv").value(), 2u);
  EXPECT_EQ(file_->get_u32("qwen3.attention.key_length").value(), 16u);
  EXPECT_EQ(file_->get_u32("qwen3.attention.value_length").value(), 16u);
  EXPECT_EQ(file_->get_f32("qwen3.rope.freq_base").value(), 10000.0f);
  EXPECT_EQ(file_->get_f32("qwen3.attention.layer_norm_rms_epsilon").value(), 1e-6f);
  EXPECT_FALSE(file_->has("qwen3.vocab_size"));  // llama.cpp writes it for llama only

  // The tokenizer, padded to the 264 embedding rows.
  auto tokens = file_->get_array_of<std::string>("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.error().message;
  ASSERT_EQ(tokens->size(), 264u);
  EXPECT_EQ((*tokens)[257], "<|end|>");
  EXPECT_EQ((*tokens)[258], "[PAD258]");
  EXPECT_EQ((*tokens)[263], "[PAD263]");
  auto types = file_->get_array_of<int32_t>("tokenizer.ggml.token_type");
  ASSERT_TRUE(types.ok());
  EXPECT_EQ((*types)[257], 3);
  EXPECT_EQ((*types)[263], 5);
  EXPECT_EQ(file_->get_u32("tokenizer.ggml.eos_token_id").value(), 257u);
  EXPECT_EQ(file_->get_string("tokenizer.ggml.model").value(), "gpt2");

  // Names, ggml shapes (PyTorch reversed), all F32.
  std::vector<std::string> names;
  for (const auto& info : file_->tensors()) names.push_back(info.name);
  const std::vector<std::string> expected_layer = {"attn_norm.weight",   "attn_q.weight",      "attn_k.weight",
                                                   "attn_v.weight",      "attn_output.weight", "attn_q_norm.weight",
                                                   "attn_k_norm.weight", "ffn_norm.weight",    "ffn_gate.weight",
                                                   "ffn_up.weight",      "ffn_down.weight"};
  std::vector<std::string> expected = {"token_embd.weight"};
  for (int layer = 0; layer < 2; ++layer) {
    for (const auto& name : expected_layer) expected.push_back("blk." + std::to_string(layer) + "." + name);
  }
  expected.push_back("output_norm.weight");  // no output.weight: tied
  EXPECT_EQ(names, expected);
  for (const auto& info : file_->tensors()) EXPECT_EQ(info.type, DType::F32) << info.name;
  EXPECT_EQ(
      std::vector<uint64_t>(tensor("token_embd.weight").shape().begin(), tensor("token_embd.weight").shape().end()),
      (std::vector<uint64_t>{64, 264}));
  EXPECT_EQ(tensor("blk.0.attn_q.weight").n_dims, 2u);
  EXPECT_EQ(tensor("blk.0.attn_q.weight").ne[0], 64u);
  EXPECT_EQ(tensor("blk.0.attn_q.weight").ne[1], 64u);
  EXPECT_EQ(tensor("blk.0.attn_k.weight").ne[1], 32u);
  EXPECT_EQ(tensor("blk.0.attn_output.weight").ne[0], 64u);
  EXPECT_EQ(tensor("blk.1.attn_q_norm.weight").ne[0], 16u);
  EXPECT_EQ(tensor("blk.0.ffn_down.weight").ne[0], 96u);
  EXPECT_EQ(tensor("blk.0.ffn_down.weight").ne[1], 64u);

  // Values are the source values (F32 out: exact), in the same row-major order, and qwen3
  // q/k are not permuted.
  EXPECT_EQ(values("token_embd.weight"), tensors["model.embed_tokens.weight"].values);
  EXPECT_EQ(values("blk.1.attn_q.weight"), tensors["model.layers.1.self_attn.q_proj.weight"].values);
  EXPECT_EQ(values("blk.0.attn_k.weight"), tensors["model.layers.0.self_attn.k_proj.weight"].values);
  EXPECT_EQ(values("blk.0.ffn_norm.weight"), tensors["model.layers.0.post_attention_layernorm.weight"].values);
}

TEST_F(HfConvert, LlamaPermutesQkAndWritesRopeFreqs) {
  auto [config, tensors] = testing::tiny_model("LlamaForCausalLM");
  config["rope_theta"] = 500000.0;
  config["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 64}};
  // Old checkpoints carry this buffer; it is skipped.
  tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = {"F32", {8}, testing::make_values("F32", 8, 99)};
  testing::write_folder(dir_, config, tensors);
  convert(DType::F32);

  EXPECT_EQ(file_->get_string("general.architecture").value(), "llama");
  EXPECT_EQ(file_->get_u32("llama.vocab_size").value(), 264u);
  EXPECT_EQ(file_->get_u32("llama.rope.dimension_count").value(), 16u);
  EXPECT_FALSE(file_->has("llama.attention.key_length"));  // config has no head_dim
  EXPECT_FALSE(file_->has("llama.rope.scaling.type"));     // llama3 is a tensor, not keys
  EXPECT_EQ(file_->get_f32("llama.rope.freq_base").value(), 500000.0f);

  HfConfig hf;
  hf.head_dim = 16;
  hf.rope_theta = 500000.0;
  hf.rope_scaling.type = "llama3";
  hf.rope_scaling.factor = 8.0;
  hf.rope_scaling.original_max_position_embeddings = 64;
  EXPECT_EQ(tensor("rope_freqs.weight").type, DType::F32);
  EXPECT_EQ(values("rope_freqs.weight"), llama3_rope_factors(hf));
  EXPECT_EQ(tensor("rope_freqs.weight").ne[0], 8u);

  // attn_q row r is source row permute(r) with n_head = 4; attn_k with n_head_kv = 2.
  const uint64_t n_embd = 64;
  for (const auto& [gguf_name, hf_name, n_head, n_rows] :
       {std::tuple{"blk.1.attn_q.weight", "model.layers.1.self_attn.q_proj.weight", 4u, 64u},
        std::tuple{"blk.1.attn_k.weight", "model.layers.1.self_attn.k_proj.weight", 2u, 32u}}) {
    const std::vector<float> got = values(gguf_name);
    const std::vector<float>& source = tensors[hf_name].values;
    ASSERT_EQ(got.size(), source.size());
    for (uint64_t r = 0; r < n_rows; ++r) {
      const uint64_t src = llama_permuted_source_row(r, n_rows, n_head);
      for (uint64_t col = 0; col < n_embd; ++col) {
        ASSERT_EQ(got[r * n_embd + col], source[src * n_embd + col]) << gguf_name << " row " << r;
      }
    }
    // Head 0 row 1 comes from row head_dim/2 = 8.
    EXPECT_EQ(got[1 * n_embd], source[8 * n_embd]);
  }
  EXPECT_EQ(values("blk.1.attn_v.weight"), tensors["model.layers.1.self_attn.v_proj.weight"].values);
  EXPECT_EQ(values("output.weight"), tensors["lm_head.weight"].values);
  EXPECT_EQ(file_->find_tensor("blk.0.rotary_emb.inv_freq"), nullptr);
}

TEST_F(HfConvert, RopeScalingKeys) {
  // linear and yarn become keys (TextModel.set_gguf_parameters); no rope_freqs tensor.
  auto [config, tensors] = testing::tiny_model("Qwen3ForCausalLM");
  config["rope_scaling"] = {
      {"rope_type", "yarn"}, {"factor", 4.0}, {"original_max_position_embeddings", 128}, {"beta_fast", 32.0}};
  testing::write_folder(dir_, config, tensors);
  convert(DType::F16);
  EXPECT_EQ(file_->get_string("qwen3.rope.scaling.type").value(), "yarn");
  EXPECT_EQ(file_->get_f32("qwen3.rope.scaling.factor").value(), 4.0f);
  EXPECT_EQ(file_->get_u32("qwen3.rope.scaling.original_context_length").value(), 128u);
  EXPECT_EQ(file_->get_f32("qwen3.rope.scaling.yarn_beta_fast").value(), 32.0f);
  EXPECT_FALSE(file_->has("qwen3.rope.scaling.yarn_beta_slow"));
  EXPECT_EQ(file_->find_tensor("rope_freqs.weight"), nullptr);

  config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  testing::write_folder(dir_, config, tensors);
  convert(DType::F16);
  EXPECT_EQ(file_->get_string("qwen3.rope.scaling.type").value(), "linear");
  EXPECT_EQ(file_->get_f32("qwen3.rope.scaling.factor").value(), 2.0f);
  EXPECT_FALSE(file_->has("qwen3.rope.scaling.original_context_length"));
}

TEST_F(HfConvert, OuttypesFollowLlamaCppRules) {
  TinyShape shape;
  shape.n_ff = 80;  // ffn_down rows of 80: not whole Q8_0 blocks
  auto [config, tensors] = testing::tiny_model("LlamaForCausalLM", shape);
  testing::write_folder(dir_, config, tensors);
  struct Case {
    DType outtype;
    uint32_t file_type;
  };
  for (const Case& c : {Case{DType::F16, 1}, Case{DType::BF16, 32}, Case{DType::Q8_0, 7}, Case{DType::F32, 0}}) {
    SCOPED_TRACE(std::string(dtype_name(c.outtype)));
    convert(c.outtype);
    EXPECT_EQ(file_->get_u32("general.file_type").value(), c.file_type);
    for (const auto& info : file_->tensors()) {
      const bool is_1d = info.n_dims == 1;
      DType expected = is_1d ? DType::F32 : c.outtype;
      if (c.outtype == DType::Q8_0 && info.ne[0] % 32 != 0) expected = DType::F16;
      EXPECT_EQ(info.type, expected) << info.name;
    }
    EXPECT_EQ(tensor("blk.0.ffn_down.weight").type, c.outtype == DType::Q8_0 ? DType::F16 : c.outtype);
    // Values: F16/BF16 are the round-to-nearest-even of the source; Q8_0 within half a step.
    const std::vector<float>& source = tensors["model.layers.0.mlp.gate_proj.weight"].values;
    const std::vector<float> got = values("blk.0.ffn_gate.weight");
    ASSERT_EQ(got.size(), source.size());
    for (size_t i = 0; i < source.size(); ++i) {
      if (c.outtype == DType::F16) {
        ASSERT_EQ(got[i], quant::fp16_to_fp32(quant::fp32_to_fp16(source[i])));
      } else if (c.outtype == DType::BF16) {
        ASSERT_EQ(got[i], quant::bf16_to_fp32(quant::fp32_to_bf16(source[i])));
      } else if (c.outtype == DType::Q8_0) {
        ASSERT_NEAR(got[i], source[i], 0.6 / 127 * 0.52);  // |x| <= 0.52 in the tiny model
      } else {
        ASSERT_EQ(got[i], source[i]);
      }
    }
  }
}

TEST_F(HfConvert, Qwen2Biases) {
  auto [config, tensors] = testing::tiny_model("Qwen2ForCausalLM");
  testing::write_folder(dir_, config, tensors);
  convert(DType::F16);
  EXPECT_EQ(file_->get_string("general.architecture").value(), "qwen2");
  for (const char* name : {"blk.0.attn_q.bias", "blk.0.attn_k.bias", "blk.0.attn_v.bias"}) {
    EXPECT_EQ(tensor(name).type, DType::F32) << name;  // biases stay F32
    EXPECT_EQ(tensor(name).n_dims, 1u);
  }
  EXPECT_EQ(tensor("blk.1.attn_q.bias").ne[0], 64u);
  EXPECT_EQ(tensor("blk.1.attn_k.bias").ne[0], 32u);
  EXPECT_EQ(values("blk.1.attn_k.bias"), tensors["model.layers.1.self_attn.k_proj.bias"].values);
  EXPECT_EQ(file_->find_tensor("blk.0.attn_q_norm.weight"), nullptr);
  EXPECT_EQ(tensor("output.weight").type, DType::F16);
}

TEST_F(HfConvert, Qwen3MoeStacksExperts) {
  auto [config, tensors] = testing::tiny_model("Qwen3MoeForCausalLM");
  testing::write_folder(dir_, config, tensors);
  convert(DType::F32);
  EXPECT_EQ(file_->get_string("general.architecture").value(), "qwen3moe");
  EXPECT_EQ(file_->get_u32("qwen3moe.expert_count").value(), 4u);
  EXPECT_EQ(file_->get_u32("qwen3moe.expert_used_count").value(), 2u);
  EXPECT_EQ(file_->get_u32("qwen3moe.expert_feed_forward_length").value(), 32u);
  const auto shape_of = [&](const std::string& name) {
    const auto s = tensor(name).shape();
    return std::vector<uint64_t>(s.begin(), s.end());
  };
  EXPECT_EQ(shape_of("blk.0.ffn_gate_inp.weight"), (std::vector<uint64_t>{64, 4}));
  EXPECT_EQ(shape_of("blk.0.ffn_gate_exps.weight"), (std::vector<uint64_t>{64, 32, 4}));
  EXPECT_EQ(shape_of("blk.0.ffn_up_exps.weight"), (std::vector<uint64_t>{64, 32, 4}));
  EXPECT_EQ(shape_of("blk.0.ffn_down_exps.weight"), (std::vector<uint64_t>{32, 64, 4}));
  EXPECT_EQ(file_->find_tensor("blk.0.ffn_gate.weight"), nullptr);
  // Expert e's matrix is slice e of the stacked tensor.
  const std::vector<float> down = values("blk.1.ffn_down_exps.weight");
  for (int e = 0; e < 4; ++e) {
    const auto& source = tensors["model.layers.1.mlp.experts." + std::to_string(e) + ".down_proj.weight"].values;
    EXPECT_TRUE(std::equal(source.begin(), source.end(), down.begin() + e * 32 * 64)) << "expert " << e;
  }
  // In f16 mode the router stays F32 (llama.cpp: FFN_GATE_INP is always F32).
  convert(DType::F16);
  EXPECT_EQ(tensor("blk.0.ffn_gate_inp.weight").type, DType::F32);
  EXPECT_EQ(tensor("blk.0.ffn_gate_exps.weight").type, DType::F16);
}

TEST_F(HfConvert, Qwen3MoeFusedExperts) {
  // transformers 5 layout: gate_up_proj [n_expert, 2*n_ff_exp, n_embd], down_proj [n_expert,
  // n_embd, n_ff_exp].
  auto [config, tensors] = testing::tiny_model("Qwen3MoeForCausalLM");
  std::vector<float> reference_up;
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = "model.layers." + std::to_string(layer) + ".mlp.experts.";
    std::vector<float> gate_up;
    std::vector<float> down;
    for (int e = 0; e < 4; ++e) {
      const std::string ex = p + std::to_string(e) + ".";
      // gate and up are F32 and F16 sources; the fused tensor is F32 holding both exactly.
      const auto& g = tensors[ex + "gate_proj.weight"].values;
      const auto& u = tensors[ex + "up_proj.weight"].values;
      const auto& d = tensors[ex + "down_proj.weight"].values;
      gate_up.insert(gate_up.end(), g.begin(), g.end());
      gate_up.insert(gate_up.end(), u.begin(), u.end());
      down.insert(down.end(), d.begin(), d.end());
      if (layer == 0) reference_up.insert(reference_up.end(), u.begin(), u.end());
      tensors.erase(ex + "gate_proj.weight");
      tensors.erase(ex + "up_proj.weight");
      tensors.erase(ex + "down_proj.weight");
    }
    tensors[p + "gate_up_proj"] = {"F32", {4, 64, 64}, gate_up};
    tensors[p + "down_proj"] = {"F32", {4, 64, 32}, down};
  }
  testing::write_folder(dir_, config, tensors);
  convert(DType::F32);
  EXPECT_EQ(values("blk.0.ffn_up_exps.weight"), reference_up);
  EXPECT_EQ(tensor("blk.0.ffn_down_exps.weight").ne[0], 32u);
}

TEST_F(HfConvert, ShardedCheckpoint) {
  auto [config, tensors] = testing::tiny_model("Qwen3ForCausalLM");
  testing::write_folder(dir_, config, tensors);
  std::filesystem::remove(dir_ / "model.safetensors");
  TensorMap first;
  TensorMap second;
  json weight_map = json::object();
  for (auto& [name, t] : tensors) {
    const bool in_first = name.find("layers.1.") == std::string::npos;
    (in_first ? first : second)[name] = t;
    weight_map[name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  testing::write_safetensors(dir_ / "model-00001-of-00002.safetensors", first);
  testing::write_safetensors(dir_ / "model-00002-of-00002.safetensors", second);
  std::ofstream(dir_ / "model.safetensors.index.json") << json{{"weight_map", weight_map}}.dump();
  convert(DType::F32);
  EXPECT_EQ(values("blk.1.ffn_up.weight"), tensors["model.layers.1.mlp.up_proj.weight"].values);
}

TEST_F(HfConvert, WritesTheFile) {
  auto [config, tensors] = testing::tiny_model("Qwen3ForCausalLM");
  testing::write_folder(dir_, config, tensors);
  const std::string out = (root_ / "out.gguf").string();
  Status status = convert_hf_model(dir_.string(), out, DType::Q8_0);
  ASSERT_TRUE(status.ok()) << status.error().message;
  auto file = gguf::File::open(out);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->find_tensor("blk.0.attn_q.weight")->type, DType::Q8_0);
  EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
}

TEST_F(HfConvert, BadFolders) {
  expect_error(": not a folder");  // dir_ does not exist yet
  std::filesystem::create_directories(dir_);
  expect_error("config.json: cannot open");

  auto [config, tensors] = testing::tiny_model("LlamaForCausalLM");
  testing::write_folder(dir_, config, tensors);
  std::filesystem::remove(dir_ / "model.safetensors");
  expect_error("no model.safetensors or model.safetensors.index.json");

  const auto with = [&](json cfg, TensorMap t) { testing::write_folder(dir_, cfg, t); };
  json gpt2 = config;
  gpt2["architectures"] = {"GPT2LMHeadModel"};
  with(gpt2, tensors);
  expect_error("architecture GPT2LMHeadModel is not supported");

  TensorMap missing = tensors;
  missing.erase("model.layers.1.self_attn.q_proj.weight");
  with(config, missing);
  expect_error("tensor 'model.layers.1.self_attn.q_proj.weight' is missing");

  TensorMap wrong_shape = tensors;
  wrong_shape["model.layers.0.self_attn.k_proj.weight"].shape = {64, 32};
  with(config, wrong_shape);
  expect_error("tensor 'model.layers.0.self_attn.k_proj.weight': shape [64, 32], expected [32, 64]");

  TensorMap no_head = tensors;
  no_head.erase("lm_head.weight");
  with(config, no_head);
  expect_error("'lm_head.weight' is missing, and config.json says tie_word_embeddings is false");

  json tied = config;
  tied["tie_word_embeddings"] = true;
  with(tied, tensors);  // lm_head differs from the embedding
  expect_error("'lm_head.weight' differs from 'model.embed_tokens.weight'");
  TensorMap same_head = tensors;
  same_head["lm_head.weight"] = tensors["model.embed_tokens.weight"];
  with(tied, same_head);  // a saved copy of the tied weight is fine
  EXPECT_TRUE(convert_hf_model(dir_.string(), (root_ / "ok.gguf").string(), DType::F16).ok());

  TensorMap extra = tensors;
  extra["model.layers.0.mlp.extra.weight"] = {"F32", {2}, {1.0f, 2.0f}};
  with(config, extra);
  expect_error("tensor 'model.layers.0.mlp.extra.weight' is not part of a LlamaForCausalLM");

  TensorMap small_vocab;
  TinyShape shape;
  shape.n_vocab = 200;  // fewer rows than the tokenizer's 258 tokens
  auto [small_config, small_tensors] = testing::tiny_model("LlamaForCausalLM", shape);
  with(small_config, small_tensors);
  expect_error("258 tokens, but the model has only 200 embedding rows");

  with(config, tensors);
  std::filesystem::remove(dir_ / "tokenizer.json");
  expect_error("tokenizer.json: cannot open");

  // A malformed safetensors file, through the converter.
  with(config, tensors);
  const char bad[] = "\x10\0\0\0\0\0\0\0{bad";
  std::ofstream(dir_ / "model.safetensors", std::ios::binary).write(bad, sizeof bad - 1);
  expect_error("model.safetensors: header length 16 is past the end");
}

TEST_F(HfConvert, NonFiniteWeightsInQ8_0AreAnError) {
  auto [config, tensors] = testing::tiny_model("Qwen3ForCausalLM");
  tensors["model.layers.0.mlp.up_proj.weight"].values[5] = std::nanf("");
  testing::write_folder(dir_, config, tensors);
  expect_error("tensor 'blk.0.ffn_up.weight'", DType::Q8_0);
}

int run_cli(const std::string& args) {
  const int status = std::system((std::string(GUFO_BINARY) + " " + args + " 2>/dev/null").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_F(HfConvert, Cli) {
  auto [config, tensors] = testing::tiny_model("Qwen2ForCausalLM");
  testing::write_folder(dir_, config, tensors);
  const std::string out = (root_ / "cli.gguf").string();
  EXPECT_EQ(run_cli("convert " + dir_.string() + " -o " + out + " --outtype bf16"), 0);
  auto file = gguf::File::open(out);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->get_u32("general.file_type").value(), 32u);
  EXPECT_EQ(run_cli("convert " + dir_.string() + " -o " + out + ".2 --outtype q4_0"), 2);  // usage
  EXPECT_EQ(run_cli("convert " + (root_ / "nope").string() + " -o " + out + ".3"), 1);
  EXPECT_FALSE(std::filesystem::exists(out + ".3"));
  // --vocab-only still works.
  EXPECT_EQ(run_cli("convert " + dir_.string() + " -o " + out + ".vocab --vocab-only"), 0);
  // Progress per tensor and a summary on stderr; --quiet prints nothing.
  const std::string err = (root_ / "err.txt").string();
  const auto stderr_of = [&](const std::string& args) {
    EXPECT_EQ(std::system((std::string(GUFO_BINARY) + " " + args + " 2>" + err).c_str()), 0) << args;
    std::ifstream in(err);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string loud = stderr_of("convert " + dir_.string() + " -o " + out + ".4 --outtype q8_0");
  const size_t n = file->tensors().size();
  EXPECT_NE(loud.find("[1/" + std::to_string(n) + "] "), std::string::npos) << loud;
  EXPECT_NE(loud.find("[" + std::to_string(n) + "/" + std::to_string(n) + "] "), std::string::npos) << loud;
  EXPECT_NE(loud.find("gufo convert: wrote " + out + ".4 (" + std::to_string(n) + " tensors, "), std::string::npos)
      << loud;
  EXPECT_EQ(stderr_of("convert " + dir_.string() + " -o " + out + ".5 --quiet"), "");
}

// Source tensor `name` of a checkpoint as fp32.
std::vector<float> source_values(const safetensors::Checkpoint& checkpoint, const std::string& name) {
  const safetensors::TensorView* view = checkpoint.find(name);
  EXPECT_NE(view, nullptr) << name;
  std::vector<float> out;
  if (view == nullptr) return out;
  for (uint64_t i = 0; i < view->n_elements(); ++i) out.push_back(decode_element(view->dtype, view->data.data(), i));
  return out;
}

// The models tools/ builds with transformers (tests/data/models/tiny-*), when present:
// every outtype converts, and in f32 the values are the checkpoint's (llama q/k permuted).
TEST(HfConvertRealModels, ConvertAll) {
  const std::filesystem::path models = std::filesystem::path(GUFO_TEST_DATA_DIR) / "models";
  int n_converted = 0;
  for (const char* name : {"tiny-qwen3", "tiny-llama", "tiny-qwen2", "tiny-qwen3-moe"}) {
    const std::filesystem::path dir = models / name;
    if (!std::filesystem::exists(dir / "config.json")) continue;
    SCOPED_TRACE(name);
    for (DType outtype : {DType::Q8_0, DType::BF16, DType::F16, DType::F32}) {
      auto conversion = prepare_hf_conversion(dir.string(), outtype);
      ASSERT_TRUE(conversion.ok()) << conversion.error().message;
      auto bytes = conversion->writer.to_bytes("out.gguf");
      ASSERT_TRUE(bytes.ok()) << bytes.error().message;
      auto file = gguf::File::parse(*bytes, "out.gguf");
      ASSERT_TRUE(file.ok()) << file.error().message;
      ASSERT_NE(file->find_tensor("token_embd.weight"), nullptr);
      if (outtype != DType::F32) continue;

      const auto& checkpoint = *conversion->checkpoint;
      const auto gguf_values = [&](const std::string& tensor_name) {
        const gguf::TensorInfo* info = file->find_tensor(tensor_name);
        EXPECT_NE(info, nullptr) << tensor_name;
        std::vector<float> out(info ? info->n_elements : 0);
        if (info) std::memcpy(out.data(), info->data, out.size() * 4);
        return out;
      };
      EXPECT_EQ(gguf_values("token_embd.weight"), source_values(checkpoint, "model.embed_tokens.weight"));
      EXPECT_EQ(gguf_values("blk.1.attn_v.weight"),
                source_values(checkpoint, "model.layers.1.self_attn.v_proj.weight"));
      const std::vector<float> q = gguf_values("blk.0.attn_q.weight");
      const std::vector<float> q_source = source_values(checkpoint, "model.layers.0.self_attn.q_proj.weight");
      const bool is_llama = file->get_string("general.architecture").value() == "llama";
      const uint64_t n_embd = file->find_tensor("blk.0.attn_q.weight")->ne[0];
      const uint64_t n_rows = q.size() / n_embd;
      const uint32_t n_head =
          file->get_u32(std::string(file->get_string("general.architecture").value()) + ".attention.head_count")
              .value();
      for (uint64_t r = 0; r < n_rows; ++r) {
        const uint64_t src = is_llama ? llama_permuted_source_row(r, n_rows, n_head) : r;
        ASSERT_TRUE(std::equal(q.begin() + r * n_embd, q.begin() + (r + 1) * n_embd, q_source.begin() + src * n_embd))
            << "attn_q row " << r;
      }
    }
    ++n_converted;
  }
  if (n_converted == 0) GTEST_SKIP() << "no models under " << models;
}

}  // namespace
}  // namespace gufo::convert
