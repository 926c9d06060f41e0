// Tests for gguf/writer.h: round trips through the reader (every value type, nested arrays,
// several alignments, v2 headers), the llama.cpp data layout, and all-or-nothing writes.
#include "gguf/writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "test_util.h"

namespace gufo::gguf {
namespace {

using testing::read_bytes;
using testing::ScratchDir;

std::vector<std::byte> pattern(size_t n_bytes, uint8_t seed) {
  std::vector<std::byte> bytes(n_bytes);
  for (size_t i = 0; i < n_bytes; ++i) bytes[i] = static_cast<std::byte>((i * 13 + seed) & 0xFF);
  return bytes;
}

std::vector<std::pair<std::string, Value>> every_value_type() {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  return {
      {"t.u8", Value::u8(200)},
      {"t.i8", Value::i8(-5)},
      {"t.u16", Value::u16(60000)},
      {"t.i16", Value::i16(-30000)},
      {"t.u32", Value::u32(4000000000u)},
      {"t.i32", Value::i32(-2000000000)},
      {"t.f32", Value::f32(nan)},
      {"t.bool", Value::boolean(false)},
      {"t.string", Value::string(std::string("with\0nul", 8))},
      {"t.u64", Value::u64(std::numeric_limits<uint64_t>::max())},
      {"t.i64", Value::i64(std::numeric_limits<int64_t>::min())},
      {"t.f64", Value::f64(-0.0)},
      {"t.a.u8", Value::array(Array(std::vector<uint8_t>{0, 255}))},
      {"t.a.i8", Value::array(Array(std::vector<int8_t>{-1}))},
      {"t.a.u16", Value::array(Array(std::vector<uint16_t>{1, 2, 3}))},
      {"t.a.i16", Value::array(Array(std::vector<int16_t>{-1, 1}))},
      {"t.a.u32", Value::array(Array(std::vector<uint32_t>{7}))},
      {"t.a.i32", Value::array(Array(std::vector<int32_t>{}))},
      {"t.a.f32", Value::array(Array(std::vector<float>{0.5f, nan}))},
      {"t.a.bool", Value::array(Array(std::vector<bool>{true, false, true}))},
      {"t.a.string", Value::array(Array(std::vector<std::string>{"", "a", "\xe2\x82\xac"}))},
      {"t.a.u64", Value::array(Array(std::vector<uint64_t>{1ull << 60}))},
      {"t.a.i64", Value::array(Array(std::vector<int64_t>{-(1ll << 60)}))},
      {"t.a.f64", Value::array(Array(std::vector<double>{1e300}))},
      {"t.a.nested", Value::array(Array(std::vector<Array>{
                         Array(std::vector<std::string>{"x"}),
                         Array(std::vector<Array>{Array(std::vector<bool>{true}), Array()}),
                         Array(std::vector<double>{}),
                     }))},
  };
}

TEST(GgufWriter, EveryValueTypeRoundTrips) {
  Writer writer;
  for (const auto& [key, value] : every_value_type()) writer.set(key, value);
  auto bytes = writer.to_bytes("round_trip.gguf");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  auto file = File::parse(*bytes, "round_trip.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->version(), 3u);
  const auto expected = every_value_type();
  ASSERT_EQ(file->metadata().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(file->metadata()[i].key, expected[i].first);  // file order is kept
    EXPECT_EQ(file->metadata()[i].value, expected[i].second) << expected[i].first;
  }
  EXPECT_TRUE(file->tensors().empty());
}

TEST(GgufWriter, SetReplacesInPlace) {
  Writer writer;
  writer.set("a", Value::u32(1));
  writer.set("b", Value::u32(2));
  writer.set("a", Value::string("one"));
  ASSERT_EQ(writer.metadata().size(), 2u);
  EXPECT_EQ(writer.metadata()[0].first, "a");
  EXPECT_EQ(writer.metadata()[0].second, Value::string("one"));
}

class GgufWriterAlignment : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GgufWriterAlignment, TensorDataIsAlignedAndPackedLikeLlamaCpp) {
  const uint32_t alignment = GetParam();
  const auto f32 = pattern(6 * 4, 1);
  const auto q8 = pattern(34 * 2, 2);
  const auto f16 = pattern(3 * 2, 3);
  Writer writer;
  writer.set("general.name", Value::string("aligned"));
  if (alignment != kDefaultAlignment) writer.set("general.alignment", Value::u32(alignment));
  writer.add_tensor({"a", DType::F32, {6}, f32, {}});
  writer.add_tensor({"b", DType::Q8_0, {32, 2}, q8, {}});
  writer.add_tensor({"c", DType::F16, {3}, f16, {}});
  auto bytes = writer.to_bytes("aligned.gguf");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  auto file = File::parse(*bytes, "aligned.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;

  EXPECT_EQ(file->alignment(), alignment);
  EXPECT_EQ(file->data_offset() % alignment, 0u);
  // llama.cpp requires each offset to be the previous one plus its size padded to alignment.
  uint64_t expected_offset = 0;
  const std::vector<const std::vector<std::byte>*> data = {&f32, &q8, &f16};
  ASSERT_EQ(file->tensors().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    const TensorInfo& tensor = file->tensors()[i];
    EXPECT_EQ(tensor.offset, expected_offset) << tensor.name;
    EXPECT_EQ(tensor.file_offset % alignment, 0u);
    ASSERT_EQ(tensor.n_bytes, data[i]->size());
    EXPECT_EQ(std::memcmp(tensor.data, data[i]->data(), data[i]->size()), 0);
    expected_offset += align_up(tensor.n_bytes, alignment);
  }
  // Padding after the last tensor too, and all padding is zeros.
  EXPECT_EQ(bytes->size(), file->data_offset() + expected_offset);
  const TensorInfo& last = file->tensors()[2];
  for (uint64_t at = last.file_offset + last.n_bytes; at < bytes->size(); ++at) {
    EXPECT_EQ((*bytes)[at], std::byte{0});
  }
}

INSTANTIATE_TEST_SUITE_P(Alignments, GgufWriterAlignment, ::testing::Values(1u, 8u, 32u, 64u, 4096u));

TEST(GgufWriter, ReaderAcceptsVersion2) {
  Writer writer;
  writer.set("general.architecture", Value::string("v2"));
  const auto data = pattern(16, 5);
  writer.add_tensor({"t", DType::F32, {2, 2}, data, {}});
  auto bytes = writer.to_bytes();
  ASSERT_TRUE(bytes.ok());
  (*bytes)[4] = std::byte{2};  // v2 and v3 share one layout: only the version differs
  auto file = File::parse(*bytes, "v2.gguf");
  ASSERT_TRUE(file.ok()) << file.error().message;
  EXPECT_EQ(file->version(), 2u);
  EXPECT_EQ(file->get_string("general.architecture").value(), "v2");
}

TEST(GgufWriter, WritesThroughTmpAndRenameAndTheFileIsZeroCopyReadable) {
  ScratchDir dir;
  const std::string path = dir.file("model.gguf");
  const auto data = pattern(64 * 4 * 4, 9);
  Writer writer;
  writer.set("general.architecture", Value::string("test"));
  writer.add_tensor({"w", DType::F32, {64, 4}, data, {}});
  const Status written = writer.write(path);
  ASSERT_TRUE(written.ok()) << written.error().message;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  auto file = File::open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  const TensorInfo* tensor = file->find_tensor("w");
  ASSERT_NE(tensor, nullptr);
  // Zero-copy: the view points into the mapping of the file, not into a copy.
  const std::span<const std::byte> mapped = file->bytes();
  EXPECT_GE(tensor->data, mapped.data());
  EXPECT_LE(tensor->data + tensor->n_bytes, mapped.data() + mapped.size());
  EXPECT_EQ(tensor->data, mapped.data() + tensor->file_offset);
  EXPECT_EQ(std::memcmp(tensor->data, data.data(), data.size()), 0);
  // Moving the File keeps every view valid (the mapping does not move).
  File moved = std::move(file).value();
  EXPECT_EQ(moved.find_tensor("w")->data, mapped.data() + tensor->file_offset);
  EXPECT_EQ(moved.tensors()[0].bytes()[5], data[5]);
}

TEST(GgufWriter, FillCallbackProducesTheData) {
  Writer writer;
  writer.add_tensor({"filled", DType::I8, {5}, {}, [](std::span<std::byte> out) -> Status {
                       for (size_t i = 0; i < out.size(); ++i) out[i] = std::byte(i + 1);
                       return ok_status();
                     }});
  auto bytes = writer.to_bytes();
  ASSERT_TRUE(bytes.ok());
  auto file = File::parse(*bytes, "filled.gguf");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file->tensors()[0].bytes()[4], std::byte{5});
}

TEST(GgufWriter, MissingDirectoryErrorNamesThePathAndLeavesNothing) {
  ScratchDir dir;
  const std::string path = dir.file("no/such/dir/out.gguf");
  Writer writer;
  writer.set("a", Value::u8(1));
  const Status status = writer.write(path);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find(path), std::string::npos) << status.error().message;
  EXPECT_NE(status.error().message.find("No such file or directory"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

TEST(GgufWriter, FailureNeverClobbersAnExistingFile) {
  ScratchDir dir;
  const std::string path = dir.file("out.gguf");
  testing::write_bytes(path, pattern(10, 0));
  const auto data = pattern(10, 0);
  {
    Writer writer;  // invalid: 10 bytes for 4 F32 elements
    writer.add_tensor({"w", DType::F32, {4}, data, {}});
    const Status status = writer.write(path);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("out.gguf: tensor 'w': has 10 bytes of data, but F32 of 4 elements needs 16"),
              std::string::npos)
        << status.error().message;
  }
  {
    Writer writer;  // fails half-way: the data callback reports an error
    writer.set("a", Value::u8(1));
    writer.add_tensor({"w", DType::F32, {4}, {}, [](std::span<std::byte>) -> Status {
                         return Error{"quantizer ran out of patience"};
                       }});
    const Status status = writer.write(path);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("tensor 'w': quantizer ran out of patience"), std::string::npos);
  }
  EXPECT_EQ(read_bytes(path), pattern(10, 0));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(GgufWriter, RenameFailureRemovesTheTmpFile) {
  ScratchDir dir;
  const std::string path = dir.file("is_a_dir.gguf");
  std::filesystem::create_directories(std::filesystem::path(path) / "child");
  Writer writer;
  writer.set("a", Value::u8(1));
  const Status status = writer.write(path);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("cannot rename"), std::string::npos) << status.error().message;
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_TRUE(std::filesystem::is_directory(std::filesystem::path(path) / "child"));
}

TEST(GgufWriter, RefusesToOverwriteItsInput) {
  ScratchDir dir;
  const std::string input = dir.file("in.gguf");
  Writer writer;
  writer.set("a", Value::u8(1));
  ASSERT_TRUE(writer.write(input).ok());
  const auto before = read_bytes(input);
  std::filesystem::create_symlink(input, dir.file("link.gguf"));
  writer.set("a", Value::u8(2));
  for (const std::string& out : {input, dir.file("link.gguf"), dir.path().string() + "/./in.gguf"}) {
    const Status status = writer.write(out, WriteOptions{{input}});
    ASSERT_FALSE(status.ok()) << out;
    EXPECT_NE(status.error().message.find("refusing to overwrite the input file"), std::string::npos);
  }
  EXPECT_EQ(read_bytes(input), before);
  EXPECT_TRUE(writer.write(dir.file("other.gguf"), WriteOptions{{input}}).ok());
}

TEST(GgufWriter, RefusesWhatReadersWouldReject) {
  const auto data = pattern(64, 0);
  struct Case {
    std::string expected;
    Writer writer;
  };
  std::vector<Case> cases(9);
  cases[0].expected = "x.gguf: key 'general.alignment': expected uint32, found uint64";
  cases[0].writer.set("general.alignment", Value::u64(32));
  cases[1].expected = "invalid alignment 24";
  cases[1].writer.set("general.alignment", Value::u32(24));
  cases[2].expected = "metadata key: empty name";
  cases[2].writer.set("", Value::u8(0));
  cases[3].expected = "arrays nested more than 16 levels deep";
  Array deep(std::vector<uint8_t>{1});
  for (int level = 0; level < 16; ++level) deep = Array(std::vector<Array>{deep});
  cases[3].writer.set("deep", Value::array(deep));
  cases[4].expected = "is 64 bytes long (at most 63 allowed)";  // llama.cpp's GGML_MAX_NAME
  cases[4].writer.add_tensor({std::string(64, 'n'), DType::F32, {16}, data, {}});
  cases[5].expected = "tensor 'w': duplicate tensor name";
  cases[5].writer.add_tensor({"w", DType::F32, {16}, data, {}});
  cases[5].writer.add_tensor({"w", DType::F32, {16}, data, {}});
  cases[6].expected = "tensor 'q': Q8_0 needs ne0 % 32 == 0, got 16";
  cases[6].writer.add_tensor({"q", DType::Q8_0, {16}, data, {}});
  cases[7].expected = "tensor 'z': dimension 1 is 0";
  cases[7].writer.add_tensor({"z", DType::F32, {16, 0}, data, {}});
  cases[8].expected = "tensor 'v': shape has 5 dimensions (1 to 4 allowed)";
  cases[8].writer.add_tensor({"v", DType::F32, {16, 1, 1, 1, 1}, data, {}});
  for (const Case& c : cases) {
    auto bytes = c.writer.to_bytes("x.gguf");
    ASSERT_FALSE(bytes.ok()) << c.expected;
    EXPECT_NE(bytes.error().message.find(c.expected), std::string::npos) << bytes.error().message;
  }
}

}  // namespace
}  // namespace gufo::gguf
