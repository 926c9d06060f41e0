// `gufo synth`: the shape table parses; a 2-layer qwen3 0.6B (4096-token vocab) in Q4_K_M is
// byte-identical for the same seed (whatever the thread count) and differs for another seed;
// its tensors, types, metadata and tokenizer load as Gufo reads models; a llama 1B has
// rope_freqs; a Qwen3-MoE shape has its router and expert stacks and runs; bad input fails.
// Run: ctest --preset unit -R quantize_test
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "engine/model.h"
#include "gguf/file.h"
#include "quant/quant.h"
#include "quantize/fast_q4_k.h"
#include "quantize/synth_model.h"
#include "quantize/synth_shapes.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace gufo::quantize {
namespace {

std::string read_all(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

constexpr uint32_t kTestVocab = 4096;

class Synth : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::scratch_dir("synth"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // NOTE(synth): one 2-layer qwen3 0.6B Q4_K_M (seed 7, all threads, 4096-token vocab)
  // shared by the tests of one process; the real 151936-row embedding would be most of a
  // run's time, and the vocab size changes no other code path.
  static std::filesystem::path& shared_dir() {
    static std::filesystem::path dir;  // set once the shared file exists
    return dir;
  }
  static const std::filesystem::path& shared_qwen() {
    static const std::filesystem::path path = [] {
      const std::filesystem::path dir =
          std::filesystem::temp_directory_path() / ("gufo_synth_shared_" + std::to_string(::getpid()));
      std::filesystem::create_directories(dir);
      SynthOptions options;
      options.arch = "qwen3";
      options.shape = "0.6b";
      options.type = *parse_output_type("q4_k_m");
      options.seed = 7;
      options.n_layer = 2;
      options.n_vocab = kTestVocab;
      const std::filesystem::path file = dir / "qwen.gguf";
      Status done = synth_model(options, file.string());
      EXPECT_TRUE(done.ok()) << done.error().message;
      shared_dir() = dir;
      return file;
    }();
    return path;
  }
  static void TearDownTestSuite() {
    if (!shared_dir().empty()) std::filesystem::remove_all(shared_dir());
  }

  std::filesystem::path write(const std::string& arch, const std::string& shape, const std::string& type, uint64_t seed,
                              unsigned n_threads, const std::string& file_name) {
    SynthOptions options;
    options.arch = arch;
    options.shape = shape;
    options.type = *parse_output_type(type);
    options.seed = seed;
    options.n_layer = 2;
    options.n_vocab = kTestVocab;
    options.n_threads = n_threads;
    const std::filesystem::path path = dir_ / file_name;
    Status done = synth_model(options, path.string());
    EXPECT_TRUE(done.ok()) << done.error().message;
    return path;
  }

  std::filesystem::path dir_;
};

TEST(FastQ4K, DecodesWithinTheReferencesErrorBand) {
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0, 0.02f);
  const int64_t n = 256 * 64;
  std::vector<float> x(n);
  for (float& value : x) value = normal(rng);
  x[3] = 0.5f;  // an outlier, and a sub-block of zeros
  std::fill(x.begin() + 512, x.begin() + 544, 0.0f);
  const uint64_t n_bytes = dtype_row_bytes(dtype_info(DType::Q4_K), n);
  std::vector<std::byte> fast(n_bytes);
  std::vector<std::byte> reference(n_bytes);
  encode_q4_k_fast(x.data(), n, fast.data());
  ASSERT_TRUE(quant::quantize_row(DType::Q4_K, x.data(), n, reference.data(), n_bytes).ok());
  std::vector<float> fast_values(n);
  std::vector<float> reference_values(n);
  ASSERT_TRUE(quant::dequantize_row(DType::Q4_K, fast.data(), n_bytes, fast_values.data(), n).ok());
  ASSERT_TRUE(quant::dequantize_row(DType::Q4_K, reference.data(), n_bytes, reference_values.data(), n).ok());
  const double fast_error = testing::relative_rms_error(fast_values, x);
  const double reference_error = testing::relative_rms_error(reference_values, x);
  EXPECT_LE(fast_error, 0.1);
  // NOTE(synth): the search buys the reference ~20-30%; 1.6x leaves room, not a regression.
  EXPECT_LE(fast_error, 1.6 * reference_error) << fast_error << " vs " << reference_error;
  for (int i = 512; i < 544; ++i) EXPECT_NEAR(fast_values[i], 0.0f, 1e-3f);
}

TEST(SynthShapes, AllParseWithTheirRealNumbers) {
  for (const SynthShape& shape : synth_shapes()) {
    auto config = synth_config(shape.arch, shape.shape);
    ASSERT_TRUE(config.ok()) << config.error().message;
    EXPECT_EQ(config->gguf_arch, shape.arch);
  }
  auto qwen = synth_config("qwen3", "0.6b");
  ASSERT_TRUE(qwen.ok());
  EXPECT_EQ(qwen->n_embd, 1024u);
  EXPECT_EQ(qwen->n_layer, 28u);
  EXPECT_EQ(qwen->n_head, 16u);
  EXPECT_EQ(qwen->n_head_kv, 8u);
  EXPECT_EQ(qwen->head_dim, 128u);
  EXPECT_EQ(qwen->n_ff, 3072u);
  EXPECT_EQ(qwen->n_vocab, 151936u);
  EXPECT_TRUE(qwen->tie_word_embeddings);
  auto llama = synth_config("llama", "8b");
  ASSERT_TRUE(llama.ok());
  EXPECT_EQ(llama->head_dim, 128u);
  EXPECT_EQ(llama->rope_scaling.type, "llama3");
  EXPECT_FALSE(synth_config("qwen3", "7b").ok());
  EXPECT_FALSE(synth_config("mistral", "7b").ok());
}

// A Qwen3-MoE shape: the router and the three expert stacks per layer in convert's names and
// layout, llama.cpp's type mix for an MoE, and a model Gufo runs (finite logits on the CPU).
TEST_F(Synth, Qwen3MoeHasRouterAndExpertStacksAndRuns) {
  auto big = synth_config("qwen3moe", "30b-a3b");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->n_expert, 128u);
  EXPECT_EQ(big->n_expert_used, 8u);
  EXPECT_EQ(big->n_ff_exp, 768u);
  EXPECT_EQ(big->n_layer, 48u);
  const std::filesystem::path path = write("qwen3moe", "small", "q4_k_m", 0, 0, "moe.gguf");
  auto file = gguf::File::open(path.string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(*file->get_string("general.architecture"), "qwen3moe");
  EXPECT_EQ(*file->get_u32("qwen3moe.expert_count"), 64u);
  EXPECT_EQ(*file->get_u32("qwen3moe.expert_used_count"), 8u);
  const gguf::TensorInfo* down = *file->get_tensor("blk.0.ffn_down_exps.weight");
  EXPECT_EQ(down->n_dims, 3u);
  EXPECT_EQ(down->ne[0], 384u);
  EXPECT_EQ(down->ne[1], 1024u);
  EXPECT_EQ(down->ne[2], 64u);
  EXPECT_EQ((*file->get_tensor("blk.0.ffn_gate_inp.weight"))->ne[1], 64u);
  EXPECT_EQ(file->find_tensor("blk.0.ffn_gate.weight"), nullptr);
  const ModelFacts facts{.n_layer = 2, .n_expert = 64, .has_output = true, .is_70b_class = false};
  for (const gguf::TensorInfo& tensor : file->tensors()) {
    EXPECT_EQ(tensor.type, choose_tensor_type(QuantMix::Q4_K_M, facts, tensor.name, tensor.shape(), DType::F32))
        << tensor.name;
  }
  cpu::CpuBackend cpu(2);
  auto model = engine::Model::load(path.string(), cpu);
  ASSERT_TRUE(model.ok()) << model.error().message;
  auto session = engine::Session::create(**model, cpu, 8);
  ASSERT_TRUE(session.ok());
  auto logits = session->eval(std::vector<int32_t>{1, 2, 3}, false);
  ASSERT_TRUE(logits.ok()) << logits.error().message;
  EXPECT_TRUE(std::all_of(logits->begin(), logits->end(), [](float v) { return std::isfinite(v); }));
}

TEST_F(Synth, SameSeedSameBytesAnyThreads_OtherSeedDiffers) {
  const auto one = write("qwen3", "0.6b", "q4_k_m", 7, 1, "one.gguf");
  const auto other = write("qwen3", "0.6b", "q4_k_m", 8, 2, "other.gguf");
  const std::string bytes = read_all(one);
  const auto two = shared_qwen();  // seed 7 too, with hardware_concurrency threads
  ASSERT_FALSE(bytes.empty());
  EXPECT_TRUE(bytes == read_all(two));
  EXPECT_EQ(bytes.size(), read_all(other).size());
  EXPECT_FALSE(bytes == read_all(other));
}

TEST_F(Synth, Qwen3FileLoads) {
  auto file = gguf::File::open(shared_qwen().string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(*file->get_string("general.architecture"), "qwen3");
  EXPECT_EQ(*file->get_u32("qwen3.block_count"), 2u);
  EXPECT_EQ(*file->get_u32("qwen3.embedding_length"), 1024u);
  EXPECT_EQ(*file->get_u32("qwen3.attention.key_length"), 128u);
  EXPECT_EQ(*file->get_u32("general.file_type"), 15u);
  EXPECT_EQ(*file->get_string("tokenizer.ggml.pre"), "qwen2");
  // The smaller vocab keeps the specials' distance from the end (151645 of 151936 for real).
  EXPECT_EQ(*file->get_u32("tokenizer.ggml.eos_token_id"), kTestVocab - (151936 - 151645));
  EXPECT_EQ((*file->get_tensor("token_embd.weight"))->ne[1], kTestVocab);
  // token_embd, 2 layers x 11, output_norm; tied: no output.weight.
  EXPECT_EQ(file->tensors().size(), 24u);
  EXPECT_EQ(file->find_tensor("output.weight"), nullptr);
  const ModelFacts facts{.n_layer = 2, .n_expert = 0, .has_output = false, .is_70b_class = false};
  for (const gguf::TensorInfo& tensor : file->tensors()) {
    EXPECT_EQ(tensor.type, choose_tensor_type(QuantMix::Q4_K_M, facts, tensor.name, tensor.shape(), DType::F32))
        << tensor.name;
  }
  EXPECT_EQ((*file->get_tensor("token_embd.weight"))->type, DType::Q6_K);
  EXPECT_EQ((*file->get_tensor("blk.1.attn_q.weight"))->type, DType::Q4_K);

  // Values: N(0, 0.02) by the documented generator, within Q6_K's error.
  const gguf::TensorInfo* embd = *file->get_tensor("token_embd.weight");
  std::vector<float> row(1024);
  const uint64_t row_bytes = dtype_row_bytes(dtype_info(DType::Q6_K), 1024);
  ASSERT_TRUE(quant::dequantize_row(DType::Q6_K, embd->data + 5 * row_bytes, row_bytes, row.data(), 1024).ok());
  std::vector<float> want(1024);
  double sum_sq = 0;
  for (uint64_t i = 0; i < 1024; ++i) {
    want[i] = 0.02f * synth_unit_value(7, "token_embd.weight", 5, i);
    sum_sq += want[i] * want[i];
  }
  EXPECT_LE(testing::relative_rms_error(row, want), 0.025);
  EXPECT_NEAR(std::sqrt(sum_sq / 1024), 0.02, 0.003);
  // A Q4_K row (the search-free encoder) against its generator values.
  const gguf::TensorInfo* attn_q = *file->get_tensor("blk.1.attn_q.weight");
  const uint64_t q4_row_bytes = dtype_row_bytes(dtype_info(DType::Q4_K), 1024);
  ASSERT_TRUE(quant::dequantize_row(DType::Q4_K, attn_q->data + 9 * q4_row_bytes, q4_row_bytes, row.data(), 1024).ok());
  for (uint64_t i = 0; i < 1024; ++i) want[i] = 0.02f * synth_unit_value(7, "blk.1.attn_q.weight", 9, i);
  EXPECT_LE(testing::relative_rms_error(row, want), 0.1);

  auto tok = tokenizer::Tokenizer::load(*file);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  const std::vector<int32_t> ids = tok->encode("hello world, this is a test", false);
  EXPECT_FALSE(ids.empty());
  EXPECT_LT(ids.size(), 27u);  // the merges make tokens longer than a byte
  auto text = tok->decode(ids);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "hello world, this is a test");
}

TEST_F(Synth, LlamaHasRopeFreqsAndPlainTypes) {
  const auto path = write("llama", "1b", "bf16", 1, 0, "llama.gguf");
  auto file = gguf::File::open(path.string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(*file->get_u32("general.file_type"), 32u);
  EXPECT_EQ(*file->get_string("tokenizer.ggml.pre"), "llama-bpe");
  const gguf::TensorInfo* freqs = *file->get_tensor("rope_freqs.weight");
  EXPECT_EQ(freqs->type, DType::F32);
  EXPECT_EQ(freqs->ne[0], 32u);  // head_dim 64 / 2
  EXPECT_EQ((*file->get_tensor("blk.0.attn_q.weight"))->type, DType::BF16);
  EXPECT_EQ((*file->get_tensor("blk.0.attn_norm.weight"))->type, DType::F32);
  auto tok = tokenizer::Tokenizer::load(*file);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  EXPECT_EQ(tok->vocab().tokens.at(kTestVocab - (128256 - 128009)), "<|eot_id|>");
}

TEST_F(Synth, Cli) {
  const std::string out = (dir_ / "cli.gguf").string();
  auto ok =
      testing::run_gufo("synth --arch qwen3 --shape 0.6b --type q8_0 --layers 1 --vocab 2048 --seed 5 -o " + out, dir_);
  EXPECT_EQ(ok.exit_code, 0) << ok.stderr_text;
  EXPECT_NE(ok.stderr_text.find("blk.0.attn_q.weight: Q8_0"), std::string::npos) << ok.stderr_text;
  EXPECT_TRUE(gguf::File::open(out).ok());
  std::filesystem::remove(out);
  for (const std::string& args : {"synth --arch qwen3 --shape 0.6b --type q2_k -o " + out,
                                  "synth --arch mistral --shape 7b --type q8_0 -o " + out,
                                  "synth --arch qwen3 --shape 0.6b --type q8_0 --layers 99 -o " + out,
                                  "synth --arch qwen3 --shape 0.6b --type q8_0 --vocab 100 -o " + out}) {
    SCOPED_TRACE(args);
    auto bad = testing::run_gufo(args + " --quiet", dir_);
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(testing::line_count(bad.stderr_text), 1) << bad.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(out));
  }
}

}  // namespace
}  // namespace gufo::quantize
