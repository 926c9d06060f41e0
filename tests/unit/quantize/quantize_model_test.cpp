// `gufo quantize` on a small GGUF written here (F32, F16, BF16 and Q8_0 sources, a row length
// that forces the fallback): every tensor gets the mix's type, values stay within per-type
// error bounds, metadata is copied with file_type updated; and the CLI's bad inputs.
// Run: ctest --preset unit -R quantize_test
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quant/quant.h"
#include "quantize/quantize_model.h"
#include "test_util.h"

namespace gufo::quantize {
namespace {

using testing::relative_rms_error;
using testing::run_gufo;

constexpr uint32_t kLayers = 8;

struct SourceTensor {
  std::string name;
  DType type;
  std::vector<uint64_t> shape;
  std::vector<float> values;  // the source's values, as its type decodes them
  std::vector<std::byte> bytes;
};

SourceTensor make_tensor(std::string name, DType type, std::vector<uint64_t> shape, float mean, std::mt19937& rng) {
  SourceTensor tensor{std::move(name), type, std::move(shape), {}, {}};
  uint64_t n = 1;
  for (uint64_t extent : tensor.shape) n *= extent;
  std::normal_distribution<float> normal(mean, 0.02f);
  std::vector<float> raw(n);
  for (float& value : raw) value = normal(rng);
  const uint64_t row = tensor.shape[0];
  const uint64_t row_bytes = dtype_row_bytes(dtype_info(type), row);
  tensor.bytes.resize(row_bytes * (n / row));
  tensor.values.resize(n);
  for (uint64_t r = 0; r < n / row; ++r) {
    EXPECT_TRUE(quant::quantize_row(type, raw.data() + r * row, static_cast<int64_t>(row),
                                    tensor.bytes.data() + r * row_bytes, row_bytes)
                    .ok());
    EXPECT_TRUE(quant::dequantize_row(type, tensor.bytes.data() + r * row_bytes, row_bytes,
                                      tensor.values.data() + r * row, static_cast<int64_t>(row))
                    .ok());
  }
  return tensor;
}

// A tied-embedding qwen3-shaped model: 256-wide rows, except ffn_down (352 = 256 + 96, so
// K-quants fall back to Q8_0).
std::vector<SourceTensor> make_model(std::mt19937& rng) {
  std::vector<SourceTensor> tensors;
  tensors.push_back(make_tensor("token_embd.weight", DType::F32, {256, 64}, 0, rng));
  for (uint32_t layer_idx = 0; layer_idx < kLayers; ++layer_idx) {
    const std::string blk = "blk." + std::to_string(layer_idx) + ".";
    tensors.push_back(make_tensor(blk + "attn_norm.weight", DType::F32, {256}, 1, rng));
    tensors.push_back(make_tensor(blk + "attn_q.weight", DType::BF16, {256, 128}, 0, rng));
    tensors.push_back(make_tensor(blk + "attn_v.weight", DType::F16, {256, 64}, 0, rng));
    tensors.push_back(make_tensor(blk + "ffn_up.weight", DType::Q8_0, {256, 352}, 0, rng));
    tensors.push_back(make_tensor(blk + "ffn_down.weight", DType::F32, {352, 256}, 0, rng));
  }
  tensors.push_back(make_tensor("output_norm.weight", DType::F32, {256}, 1, rng));
  return tensors;
}

void write_model(const std::vector<SourceTensor>& tensors, const std::string& path) {
  gguf::Writer writer;
  writer.set("general.architecture", gguf::Value::string("qwen3"));
  writer.set("general.file_type", gguf::Value::u32(0));
  writer.set("qwen3.block_count", gguf::Value::u32(kLayers));
  writer.set("qwen3.attention.head_count", gguf::Value::u32(4));
  writer.set("qwen3.attention.head_count_kv", gguf::Value::u32(2));
  writer.set("test.kept", gguf::Value::string("unchanged"));
  for (const SourceTensor& tensor : tensors) {
    writer.add_tensor({tensor.name, tensor.type, tensor.shape, tensor.bytes, {}});
  }
  ASSERT_TRUE(writer.write(path).ok());
}

// NOTE(quantize): bounds on the relative RMS error for N(0, 0.02) weights, about twice
// what each format gives (Q8_0 ~0.5%, Q6_K ~1%, Q5_K ~2.5%, Q4_K ~5%); F16/BF16 round once.
double error_bound(DType type) {
  switch (type) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1e-3;
    case DType::BF16:
      return 5e-3;
    case DType::Q8_0:
      return 0.01;
    case DType::Q6_K:
      return 0.025;
    case DType::Q5_K:
      return 0.05;
    case DType::Q4_K:
      return 0.1;
    default:
      return -1;
  }
}

class QuantizeModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::scratch_dir("quantize");
    std::mt19937 rng(1234);
    source_ = make_model(rng);
    in_path_ = (dir_ / "in.gguf").string();
    write_model(source_, in_path_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::vector<SourceTensor> source_;
  std::string in_path_;
};

TEST_F(QuantizeModel, EveryMixGivesItsTypesAndBoundedErrors) {
  const ModelFacts facts{.n_layer = kLayers, .n_expert = 0, .has_output = false, .is_70b_class = false};
  for (QuantMix mix : {QuantMix::Q8_0, QuantMix::Q6_K, QuantMix::Q5_K_M, QuantMix::Q4_K_M}) {
    SCOPED_TRACE(std::string(quant_mix_name(mix)));
    const std::string out_path = (dir_ / "out.gguf").string();
    QuantizeOptions options;
    options.n_threads = 3;
    Status done = quantize_model(in_path_, out_path, mix, options);
    ASSERT_TRUE(done.ok()) << done.error().message;
    auto file = gguf::File::open(out_path);
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(*file->get_u32("general.file_type"), quant_mix_file_type(mix));
    EXPECT_EQ(*file->get_u32("general.quantization_version"), 2u);
    EXPECT_EQ(*file->get_string("test.kept"), "unchanged");
    EXPECT_EQ(*file->get_u32("qwen3.block_count"), kLayers);
    ASSERT_EQ(file->tensors().size(), source_.size());
    for (size_t i = 0; i < source_.size(); ++i) {
      const SourceTensor& src = source_[i];
      const gguf::TensorInfo& out = file->tensors()[i];
      SCOPED_TRACE(src.name);
      ASSERT_EQ(out.name, src.name);
      ASSERT_EQ(std::vector<uint64_t>(out.shape().begin(), out.shape().end()), src.shape);
      EXPECT_EQ(out.type, choose_tensor_type(mix, facts, src.name, src.shape, src.type));
      if (out.type == src.type) {  // unchanged tensors are copied byte for byte
        EXPECT_EQ(std::memcmp(out.data, src.bytes.data(), src.bytes.size()), 0);
        continue;
      }
      std::vector<float> values(src.values.size());
      const uint64_t row = src.shape[0];
      const uint64_t row_bytes = dtype_row_bytes(dtype_info(out.type), row);
      for (uint64_t r = 0; r < values.size() / row; ++r) {
        ASSERT_TRUE(quant::dequantize_row(out.type, out.data + r * row_bytes, row_bytes, values.data() + r * row,
                                          static_cast<int64_t>(row))
                        .ok());
      }
      EXPECT_LE(relative_rms_error(values, src.values), error_bound(out.type)) << dtype_name(out.type);
    }
    // Spot checks of the mix itself (8 layers: more bits on 0, 3, 6, 7).
    const auto type_of = [&](const char* name) { return (*file->get_tensor(name))->type; };
    if (mix == QuantMix::Q4_K_M) {
      EXPECT_EQ(type_of("token_embd.weight"), DType::Q6_K);  // tied: the output's type
      EXPECT_EQ(type_of("blk.0.attn_v.weight"), DType::Q6_K);
      EXPECT_EQ(type_of("blk.1.attn_v.weight"), DType::Q4_K);
      EXPECT_EQ(type_of("blk.3.attn_v.weight"), DType::Q6_K);
      EXPECT_EQ(type_of("blk.1.attn_q.weight"), DType::Q4_K);
      EXPECT_EQ(type_of("blk.1.ffn_down.weight"), DType::Q8_0);  // 352 % 256 != 0
      EXPECT_EQ(type_of("blk.1.attn_norm.weight"), DType::F32);
    }
    std::filesystem::remove(out_path);
  }
}

TEST_F(QuantizeModel, RefusesToOverwriteItsInput) {
  const auto size_before = std::filesystem::file_size(in_path_);
  Status done = quantize_model(in_path_, in_path_, QuantMix::Q8_0, {});
  ASSERT_FALSE(done.ok());
  EXPECT_NE(done.error().message.find("refusing to overwrite"), std::string::npos);
  EXPECT_EQ(std::filesystem::file_size(in_path_), size_before);
}

TEST_F(QuantizeModel, Cli) {
  const std::string out = (dir_ / "cli.gguf").string();
  auto ok = run_gufo("quantize " + in_path_ + " " + out + " q4_k_m", dir_);
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_text;
  EXPECT_NE(ok.stderr_text.find("token_embd.weight: F32 -> Q6_K"), std::string::npos) << ok.stderr_text;
  EXPECT_TRUE(gguf::File::open(out).ok());
  std::filesystem::remove(out);

  auto quiet = run_gufo("quantize " + in_path_ + " " + out + " Q8_0 --quiet", dir_);
  EXPECT_EQ(quiet.exit_code, 0) << quiet.stderr_text;
  EXPECT_EQ(quiet.stderr_text, "");
  std::filesystem::remove(out);

  const std::string missing = (dir_ / "missing.gguf").string();
  for (const std::string& args :
       {"quantize " + in_path_ + " " + out + " q3_k", "quantize " + missing + " " + out + " q4_k_m",
        "quantize " + in_path_ + " " + in_path_ + " q4_k_m"}) {
    SCOPED_TRACE(args);
    auto bad = run_gufo(args + " --quiet", dir_);
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(testing::line_count(bad.stderr_text), 1) << bad.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(out + ".tmp"));
  }
  EXPECT_TRUE(gguf::File::open(in_path_).ok());  // the input survived OUT == IN
}

TEST_F(QuantizeModel, OverrideKvSetsMetadataAsLlamaQuantizeDoes) {
  const std::string out = (dir_ / "override.gguf").string();
  auto ok = run_gufo("quantize " + in_path_ + " " + out +
                         " q8_0 --quiet --override-kv test.pooling_type=int:3 "
                         "--override-kv tokenizer.ggml.add_eos_token=bool:true --override-kv general.name=str:a=b:c "
                         "--override-kv test.scale=float:0.5",
                     dir_);
  ASSERT_EQ(ok.exit_code, 0) << ok.stderr_text;
  auto file = gguf::File::open(out);
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(*file->get_u32("test.pooling_type"), 3u);  // int is written as uint32, as llama-quantize does
  EXPECT_EQ(*file->get_bool("tokenizer.ggml.add_eos_token"), true);
  EXPECT_EQ(*file->get_string("general.name"), "a=b:c");  // the first '=' and ':' split
  EXPECT_EQ(*file->get_f32("test.scale"), 0.5f);
  std::filesystem::remove(out);

  for (const std::string bad : {"novalue", "=int:3", "k=3", "k=int:-1", "k=int:4294967296", "k=int:3x", "k=bool:yes",
                                "k=float:inf", "k=float:", "k=u8:1"}) {
    SCOPED_TRACE(bad);
    auto refused = run_gufo("quantize " + in_path_ + " " + out + " q8_0 --quiet --override-kv " + bad, dir_);
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_EQ(testing::line_count(refused.stderr_text), 1) << refused.stderr_text;
    EXPECT_NE(refused.stderr_text.find("--override-kv '" + bad + "'"), std::string::npos) << refused.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

}  // namespace
}  // namespace gufo::quantize
