// Tests for gguf/file.h on good input: typed getters and their messages, lookups, defaults,
// open() errors, and the committed good corpus (tests/data/good).
#include "gguf/file.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/writer.h"
#include "test_util.h"

namespace gufo::gguf {
namespace {

using testing::data_dir;

File parse_or_die(const std::vector<std::byte>& bytes, const std::string& name) {
  auto file = File::parse(bytes, name);
  GUFO_CHECK(file.ok());
  return std::move(file).value();
}

std::vector<std::byte> sample_bytes() {
  static const std::vector<std::byte> data(32, std::byte{1});
  Writer writer;
  writer.set("general.architecture", Value::string("llama"));
  writer.set("general.alignment", Value::u32(32));
  writer.set("llama.block_count", Value::u32(2));
  writer.set("llama.rope.freq_base", Value::f32(10000.0f));
  writer.set("tokenizer.ggml.tokens", Value::array(Array(std::vector<std::string>{"a", "b"})));
  writer.set("tokenizer.ggml.scores", Value::array(Array(std::vector<float>{0.5f, -1.0f})));
  writer.add_tensor({"output.weight", DType::F32, {4, 2}, data, {}});
  return writer.to_bytes().value();
}

TEST(GgufReader, TypedGetters) {
  const auto bytes = sample_bytes();
  const File file = parse_or_die(bytes, "model.gguf");
  EXPECT_EQ(file.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(file.get_u32("llama.block_count").value(), 2u);
  EXPECT_EQ(file.get_f32("llama.rope.freq_base").value(), 10000.0f);
  const auto tokens = file.get_array_of<std::string>("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[1], "b");
  EXPECT_EQ(file.get_array_of<float>("tokenizer.ggml.scores").value()[1], -1.0f);
  EXPECT_TRUE(file.has("llama.block_count"));
  EXPECT_FALSE(file.has("llama.block"));
  EXPECT_EQ(file.metadata()[2].key, "llama.block_count");
}

TEST(GgufReader, GetterErrorsNameFileKeyAndTypes) {
  const auto bytes = sample_bytes();
  const File file = parse_or_die(bytes, "model.gguf");
  EXPECT_EQ(file.get_u32("general.architecture").error().message,
            "model.gguf: key 'general.architecture': expected uint32, found string");
  EXPECT_EQ(file.get_u64("llama.block_count").error().message,
            "model.gguf: key 'llama.block_count': expected uint64, found uint32");
  EXPECT_EQ(file.get_string("nope").error().message, "model.gguf: key 'nope' not found");
  EXPECT_EQ(file.get_array_of<int32_t>("tokenizer.ggml.tokens").error().message,
            "model.gguf: key 'tokenizer.ggml.tokens': expected array of int32, found array of string");
  EXPECT_EQ(file.get_array("llama.block_count").error().message,
            "model.gguf: key 'llama.block_count': expected array, found uint32");
  EXPECT_EQ(file.get_tensor("missing.weight").error().message, "model.gguf: tensor 'missing.weight' not found");
}

TEST(GgufReader, TensorTableInFileOrderAndByName) {
  const auto bytes = sample_bytes();
  const File file = parse_or_die(bytes, "model.gguf");
  ASSERT_EQ(file.tensors().size(), 1u);
  const TensorInfo* tensor = file.get_tensor("output.weight").value();
  EXPECT_EQ(tensor, &file.tensors()[0]);
  EXPECT_EQ(tensor->type, DType::F32);
  ASSERT_EQ(tensor->shape().size(), 2u);
  EXPECT_EQ(tensor->shape()[0], 4u);
  EXPECT_EQ(tensor->shape()[1], 2u);
  EXPECT_EQ(tensor->n_elements, 8u);
  EXPECT_EQ(tensor->n_bytes, 32u);
  EXPECT_EQ(tensor->data, bytes.data() + tensor->file_offset);  // parse() is zero-copy too
}

TEST(GgufReader, AlignmentDefaultsTo32) {
  Writer writer;
  writer.set("a", Value::u8(1));
  const auto bytes = writer.to_bytes().value();
  EXPECT_EQ(parse_or_die(bytes, "x.gguf").alignment(), 32u);
}

TEST(GgufReader, AFileWithoutTensorsNeedsNoPadding) {
  Writer writer;
  writer.set("a", Value::u8(1));
  auto bytes = writer.to_bytes().value();
  bytes.resize(24 + 8 + 1 + 4 + 1);  // header + one entry, no padding after it
  const File file = parse_or_die(bytes, "no_padding.gguf");
  EXPECT_EQ(file.get_u8("a").value(), 1);
  EXPECT_TRUE(file.tensors().empty());
}

TEST(GgufReader, OpenErrorsNameThePath) {
  testing::ScratchDir dir;
  auto missing = File::open(dir.file("missing.gguf"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, dir.file("missing.gguf") + ": cannot open: No such file or directory");
  auto directory = File::open(dir.path().string());
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.error().message.find("is a directory"), std::string::npos);
}

TEST(GgufReader, GoodCorpusTiny) {
  auto file = File::open((data_dir() / "good" / "tiny.gguf").string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->version(), 3u);
  EXPECT_EQ(file->get_string("general.architecture").value(), "tiny");
  EXPECT_EQ(file->get_array_of<std::string>("tokenizer.ggml.tokens").value().size(), 10u);
  ASSERT_EQ(file->tensors().size(), 3u);
  EXPECT_EQ(file->tensors()[0].type, DType::F32);
  EXPECT_EQ(file->tensors()[1].type, DType::F16);
  EXPECT_EQ(file->tensors()[2].type, DType::Q8_0);
  EXPECT_EQ(file->tensors()[2].n_bytes, 136u);
  EXPECT_EQ(file->tensors()[2].name, "blk.0.ffn_down.weight");
}

TEST(GgufReader, GoodCorpusAllValueTypes) {
  auto file = File::open((data_dir() / "good" / "all_value_types.gguf").string());
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->alignment(), 64u);
  EXPECT_EQ(file->get_i8("test.i8").value(), -128);
  EXPECT_EQ(file->get_u16("test.u16").value(), 65535);
  EXPECT_EQ(file->get_i16("test.i16").value(), -32768);
  EXPECT_EQ(file->get_i32("test.i32").value(), INT32_MIN);
  EXPECT_EQ(file->get_i64("test.i64").value(), INT64_MIN);
  EXPECT_EQ(file->get_f64("test.f64").value(), -2.5e-300);
  EXPECT_EQ(file->get_bool("test.bool").value(), true);
  const Array* nested = file->get_array("test.array.nested").value();
  ASSERT_EQ(nested->element_type(), ValueType::Array);
  const auto& inner = *nested->get_if<Array>();
  ASSERT_EQ(inner.size(), 4u);
  EXPECT_EQ(*inner[1].get_if<std::string>(), (std::vector<std::string>{"a", "bc"}));
  EXPECT_EQ(inner[2].get_if<Array>()->at(0).get_if<uint8_t>()->at(0), 9);
  EXPECT_EQ(file->get_array("test.array.bool").value()->get_if<bool>()->size(), 3u);
  for (const TensorInfo& tensor : file->tensors()) EXPECT_EQ(tensor.file_offset % 64, 0u);
}

}  // namespace
}  // namespace gufo::gguf
