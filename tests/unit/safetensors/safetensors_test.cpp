// Safetensors reader: good files (dtypes, shapes, zero-copy views, __metadata__), a table of
// malformed headers that must each give a one-line error naming file and tensor, and
// sharded checkpoints through model.safetensors.index.json.
// Run: ctest --preset unit -R safetensors_test
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "safetensors/safetensors.h"

namespace gufo::safetensors {
namespace {

using nlohmann::json;

std::vector<std::byte> file_bytes(const std::string& header, const std::vector<uint8_t>& data,
                                  std::optional<uint64_t> length = {}) {
  std::vector<std::byte> out(8);
  const uint64_t n = length.value_or(header.size());
  std::memcpy(out.data(), &n, 8);
  for (char c : header) out.push_back(static_cast<std::byte>(c));
  for (uint8_t b : data) out.push_back(static_cast<std::byte>(b));
  return out;
}

std::vector<uint8_t> iota_bytes(size_t n) {
  std::vector<uint8_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(i);
  return out;
}

TEST(Safetensors, ParsesDtypesShapesAndViews) {
  const json header = {{"__metadata__", {{"format", "pt"}}},
                       {"a", {{"dtype", "F32"}, {"shape", {2, 3}}, {"data_offsets", {0, 24}}}},
                       {"b", {{"dtype", "F16"}, {"shape", {4}}, {"data_offsets", {24, 32}}}},
                       {"c", {{"dtype", "BF16"}, {"shape", json::array()}, {"data_offsets", {32, 34}}}},
                       {"d", {{"dtype", "F32"}, {"shape", {0, 5}}, {"data_offsets", {34, 34}}}}};
  const auto bytes = file_bytes(header.dump(), iota_bytes(34));
  auto views = parse(bytes, "m.safetensors");
  ASSERT_TRUE(views.ok()) << views.error().message;
  ASSERT_EQ(views->size(), 4u);
  std::map<std::string, TensorView> by_name;
  for (const auto& view : *views) by_name[view.name] = view;
  EXPECT_EQ(by_name["a"].dtype, DType::F32);
  EXPECT_EQ(by_name["a"].shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(by_name["a"].n_elements(), 6u);
  EXPECT_EQ(by_name["b"].dtype, DType::F16);
  EXPECT_EQ(by_name["c"].dtype, DType::BF16);
  EXPECT_EQ(by_name["c"].n_elements(), 1u);  // a scalar
  EXPECT_EQ(by_name["d"].n_elements(), 0u);
  // Views point into the buffer, after the header.
  const std::byte* data_start = bytes.data() + 8 + header.dump().size();
  EXPECT_EQ(by_name["a"].data.data(), data_start);
  EXPECT_EQ(by_name["b"].data.data(), data_start + 24);
  EXPECT_EQ(by_name["b"].data.size(), 8u);
}

struct BadCase {
  const char* what;
  std::string header;
  size_t data_bytes;
  std::optional<uint64_t> length;
  const char* expected;  // substring of the error
};

TEST(Safetensors, MalformedHeadersAreErrors) {
  const auto entry = [](const char* dtype, json shape, json offsets) {
    return json{{"dtype", dtype}, {"shape", shape}, {"data_offsets", offsets}};
  };
  const std::vector<BadCase> cases = {
      {"length past the end", "{}", 0, 1000, "header length 1000 is past the end"},
      {"absurd length", "{}", 0, uint64_t{1} << 62, "is past the end of the file"},
      {"not JSON", "{\"a\": ", 0, {}, "header is not valid JSON"},
      {"not an object", "[1, 2]", 0, {}, "header: expected a JSON object"},
      {"entry not an object", json{{"w", 3}}.dump(), 0, {}, "tensor 'w': expected an object"},
      {"missing dtype",
       json{{"w", {{"shape", {1}}, {"data_offsets", {0, 4}}}}}.dump(),
       4,
       {},
       "tensor 'w': dtype: expected a string"},
      {"unsupported dtype",
       json{{"w", entry("I64", {1}, {0, 8})}}.dump(),
       8,
       {},
       "tensor 'w': dtype I64 is not supported"},
      {"fp8 dtype",
       json{{"w", entry("F8_E4M3", {1}, {0, 1})}}.dump(),
       1,
       {},
       "tensor 'w': dtype F8_E4M3 is not supported"},
      {"shape not array", json{{"w", entry("F32", 4, {0, 16})}}.dump(), 16, {}, "tensor 'w': shape: expected an array"},
      {"negative extent",
       json{{"w", entry("F32", {-1}, {0, 4})}}.dump(),
       4,
       {},
       "tensor 'w': shape: expected non-negative integers"},
      {"too many dims",
       json{{"w", entry("F32", {1, 1, 1, 1, 1, 1, 1, 1, 1}, {0, 4})}}.dump(),
       4,
       {},
       "tensor 'w': shape has 9 dimensions"},
      {"overflowing shape",
       json{{"w", entry("F32", {1ull << 40, 1ull << 40}, {0, 4})}}.dump(),
       4,
       {},
       "tensor 'w': shape [1099511627776,1099511627776] has too many elements"},
      {"offsets wrong arity",
       json{{"w", entry("F32", {1}, {0})}}.dump(),
       4,
       {},
       "tensor 'w': data_offsets: expected [begin, end]"},
      {"offsets negative",
       json{{"w", entry("F32", {1}, {-4, 0})}}.dump(),
       4,
       {},
       "tensor 'w': data_offsets: expected [begin, end]"},
      {"begin after end",
       json{{"w", entry("F32", {1}, {8, 4})}}.dump(),
       8,
       {},
       "tensor 'w': data_offsets [8, 4]: begin is after end"},
      {"past the data",
       json{{"w", entry("F32", {4}, {0, 16})}}.dump(),
       12,
       {},
       "tensor 'w': data_offsets [0, 16] run past the end of the data (12 bytes)"},
      {"size mismatch",
       json{{"w", entry("F16", {3}, {0, 8})}}.dump(),
       8,
       {},
       "tensor 'w': data_offsets [0, 8] hold 8 bytes, but F16 of shape [3] needs 6"},
      {"overlap",
       json{{"a", entry("F32", {2}, {0, 8})}, {"b", entry("F32", {2}, {4, 12})}}.dump(),
       12,
       {},
       "tensor 'b': data overlaps tensor 'a'"},
      {"duplicate name",
       R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},
           "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
       8,
       {},
       "tensor 'w': duplicate name"},
  };
  for (const BadCase& bad : cases) {
    const auto bytes = file_bytes(bad.header, iota_bytes(bad.data_bytes), bad.length);
    auto views = parse(bytes, "bad.safetensors");
    ASSERT_FALSE(views.ok()) << bad.what;
    const std::string& message = views.error().message;
    EXPECT_EQ(message.rfind("bad.safetensors: ", 0), 0u) << bad.what << ": " << message;
    EXPECT_NE(message.find(bad.expected), std::string::npos) << bad.what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << bad.what;
  }
}

TEST(Safetensors, TooShortFile) {
  const std::vector<std::byte> bytes(5);
  auto views = parse(bytes, "s.safetensors");
  ASSERT_FALSE(views.ok());
  EXPECT_NE(views.error().message.find("too short"), std::string::npos);
}

TEST(Safetensors, NestedDuplicateKeysAreNotTensorDuplicates) {
  // Only top-level keys name tensors; a key repeated inside an entry is just JSON.
  const std::string header =
      R"({"__metadata__": {"k": "1"}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})";
  auto views = parse(file_bytes(header, iota_bytes(4)), "ok.safetensors");
  ASSERT_TRUE(views.ok()) << views.error().message;
  EXPECT_EQ(views->size(), 1u);
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gufo_safetensors_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write_file(const std::string& name, const std::vector<std::byte>& bytes) {
    std::ofstream(dir_ / name, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  void write_shard(const std::string& name, const std::vector<std::string>& tensors) {
    json header = json::object();
    uint64_t offset = 0;
    for (const auto& tensor : tensors) {
      header[tensor] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {offset, offset + 4}}};
      offset += 4;
    }
    write_file(name, file_bytes(header.dump(), iota_bytes(offset)));
  }
  void write_index(const json& weight_map) {
    std::ofstream(dir_ / "model.safetensors.index.json") << json{{"weight_map", weight_map}}.dump();
  }
  std::filesystem::path dir_;
};

TEST_F(CheckpointTest, SingleFile) {
  write_shard("model.safetensors", {"a", "b"});
  auto checkpoint = Checkpoint::open(dir_.string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
  EXPECT_EQ(checkpoint->tensors().size(), 2u);
  ASSERT_NE(checkpoint->find("b"), nullptr);
  EXPECT_EQ(checkpoint->find("c"), nullptr);
  EXPECT_EQ(checkpoint->paths().size(), 1u);
}

TEST_F(CheckpointTest, Sharded) {
  write_shard("model-00001-of-00002.safetensors", {"a", "b"});
  write_shard("model-00002-of-00002.safetensors", {"c"});
  write_index({{"a", "model-00001-of-00002.safetensors"},
               {"b", "model-00001-of-00002.safetensors"},
               {"c", "model-00002-of-00002.safetensors"}});
  auto checkpoint = Checkpoint::open(dir_.string());
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().message;
  EXPECT_EQ(checkpoint->tensors().size(), 3u);
  EXPECT_EQ(checkpoint->paths().size(), 2u);
  // Views stay valid after the Checkpoint moves.
  Checkpoint moved = std::move(checkpoint).value();
  const TensorView* c = moved.find("c");
  ASSERT_NE(c, nullptr);
  float value = 0;
  std::memcpy(&value, c->data.data(), 4);
  uint8_t expected[4] = {0, 1, 2, 3};
  float expected_value = 0;
  std::memcpy(&expected_value, expected, 4);
  EXPECT_EQ(value, expected_value);
}

TEST_F(CheckpointTest, ShardedErrors) {
  write_shard("s1.safetensors", {"a", "b"});
  write_shard("s2.safetensors", {"b"});
  struct Case {
    json weight_map;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {{{"a", "s1.safetensors"}, {"b", "s1.safetensors"}, {"x", "s1.safetensors"}},
       "tensor 'x': listed in s1.safetensors but not found there"},
      {{{"a", "s1.safetensors"}, {"b", "s2.safetensors"}}, "tensor 'b': not listed for this shard"},
      {{{"a", "s1.safetensors"}, {"b", "s1.safetensors"}, {"c", "missing.safetensors"}},
       "missing.safetensors: cannot open"},
      {{{"a", "../s1.safetensors"}}, "is not a file name in the folder"},
      {{{"a", 3}}, "weight_map['a']: expected a file name"},
      {json::object(), "weight_map: expected a non-empty object"},
  };
  for (const Case& bad : cases) {
    write_index(bad.weight_map);
    auto checkpoint = Checkpoint::open(dir_.string());
    ASSERT_FALSE(checkpoint.ok()) << bad.weight_map.dump();
    EXPECT_NE(checkpoint.error().message.find(bad.expected), std::string::npos) << checkpoint.error().message;
  }
}

TEST_F(CheckpointTest, NothingToOpen) {
  auto checkpoint = Checkpoint::open(dir_.string());
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_NE(checkpoint.error().message.find("no model.safetensors or model.safetensors.index.json"), std::string::npos);
  write_file("model.safetensors", {});
  checkpoint = Checkpoint::open(dir_.string());
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_NE(checkpoint.error().message.find("model.safetensors: file of 0 bytes is too short"), std::string::npos)
      << checkpoint.error().message;
}

TEST_F(CheckpointTest, BadIndexJson) {
  write_shard("model.safetensors", {"a"});
  std::ofstream(dir_ / "model.safetensors.index.json") << "{not json";
  auto checkpoint = Checkpoint::open(dir_.string());
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_NE(checkpoint.error().message.find("model.safetensors.index.json: not valid JSON"), std::string::npos);
}

}  // namespace
}  // namespace gufo::safetensors
