// The malformed GGUF corpus: a valid baseline file, described field by field, and one
// mutation of it per case (see corpus.h). Byte layout: ggml docs/gguf.md, "File Structure".
// Checked against the committed tests/data/bad by tests/unit/gguf/corpus_test.cpp.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "corpus.h"

namespace gufo::corpus {
namespace {

// NOTE(corpus): on-disk ids used below (spec, gguf_metadata_value_type and ggml_type).
constexpr uint32_t kTypeU8 = 0;
constexpr uint32_t kTypeU32 = 4;
constexpr uint32_t kTypeBool = 7;
constexpr uint32_t kTypeString = 8;
constexpr uint32_t kTypeArray = 9;
constexpr uint32_t kTensorF32 = 0;
constexpr uint32_t kTensorQ8_0 = 8;
constexpr uint32_t kTensorF64 = 28;

struct Bytes {
  std::vector<std::byte> data;

  template <class T>
  Bytes& put(T value) {
    const size_t at = data.size();
    data.resize(at + sizeof(T));
    std::memcpy(data.data() + at, &value, sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& raw(std::string_view text) {
    for (char c : text) data.push_back(static_cast<std::byte>(c));
    return *this;
  }
  Bytes& str(std::string_view text) { return u64(text.size()).raw(text); }
  Bytes& append(const Bytes& other) {
    data.insert(data.end(), other.data.begin(), other.data.end());
    return *this;
  }
};

struct RawKv {
  std::string key;
  uint32_t type;
  Bytes value;
};

struct RawTensor {
  std::string name;
  std::vector<uint64_t> ne;
  uint32_t type = kTensorF32;
  uint64_t offset = 0;
  std::optional<uint32_t> n_dims;  // overrides ne.size()
};

// A GGUF file described field by field, so a case can break exactly one field.
struct RawFile {
  std::string magic = "GGUF";
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count;  // override of tensors.size()
  std::optional<uint64_t> kv_count;      // override of kvs.size()
  std::vector<RawKv> kvs;
  std::vector<RawTensor> tensors;
  uint64_t alignment = 32;  // used to pad to the data section
  uint64_t data_bytes = 0;  // zero bytes after the padding

  std::vector<std::byte> serialize() const {
    Bytes out;
    out.raw(magic).u32(version);
    out.u64(tensor_count.value_or(tensors.size()));
    out.u64(kv_count.value_or(kvs.size()));
    for (const RawKv& kv : kvs) out.str(kv.key).u32(kv.type).append(kv.value);
    for (const RawTensor& tensor : tensors) {
      out.str(tensor.name).u32(tensor.n_dims.value_or(static_cast<uint32_t>(tensor.ne.size())));
      for (uint64_t extent : tensor.ne) out.u64(extent);
      out.u32(tensor.type).u64(tensor.offset);
    }
    while (out.data.size() % alignment != 0) out.u8(0);
    for (uint64_t i = 0; i < data_bytes; ++i) out.u8(0);
    return out.data;
  }
};

Bytes u32_value(uint32_t v) { return Bytes().u32(v); }
Bytes string_value(std::string_view text) { return Bytes().str(text); }

// The valid file every case starts from: two keys and one F32 [8, 2] tensor of 64 bytes.
RawFile baseline() {
  RawFile file;
  file.kvs.push_back({"general.architecture", kTypeString, string_value("test")});
  file.kvs.push_back({"test.count", kTypeU32, u32_value(7)});
  file.tensors.push_back({"w", {8, 2}, kTensorF32, 0, std::nullopt});
  file.data_bytes = 64;
  return file;
}

std::vector<std::byte> cut(std::vector<std::byte> bytes, size_t size) {
  bytes.resize(size);
  return bytes;
}

// Offset where the tensor infos of `file` begin.
size_t tensor_infos_offset(RawFile file) {
  file.tensors.clear();
  file.tensor_count = 0;
  file.data_bytes = 0;
  file.alignment = 1;
  return file.serialize().size();
}

}  // namespace

std::vector<CorpusFile> bad_corpus() {
  std::vector<CorpusFile> cases;
  const auto add = [&](std::string name, std::vector<std::byte> bytes, std::string expected) {
    cases.push_back({std::move(name) + ".gguf", std::move(bytes), std::move(expected)});
  };
  const auto add_file = [&](std::string name, const RawFile& file, std::string expected) {
    add(std::move(name), file.serialize(), std::move(expected));
  };
  const std::vector<std::byte> good = baseline().serialize();

  // ---- header ----
  add("empty", {}, "truncated header (magic) at offset 0");
  {
    RawFile f = baseline();
    f.magic = "GGML";
    add_file("bad_magic", f, "bad magic 'GGML'");
  }
  {
    RawFile f = baseline();
    f.version = 1;
    add_file("version_1", f, "GGUF version 1 is not supported");
  }
  {
    RawFile f = baseline();
    f.version = 4;
    add_file("version_4", f, "unsupported GGUF version 4");
  }
  {
    RawFile f = baseline();
    f.version = 0x03000000;  // a big-endian v3 file read little-endian
    add_file("version_big_endian", f, "looks big-endian");
  }
  add("truncated_header", cut(good, 12), "truncated header (tensor_count) at offset 8");
  {
    RawFile f = baseline();
    f.kv_count = uint64_t{1} << 62;
    add_file("kv_count_huge", f, "kv_count 4611686018427387904 is impossible");
  }
  {
    RawFile f = baseline();
    f.tensor_count = uint64_t{1} << 40;
    add_file("tensor_count_huge", f, "tensor_count 1099511627776 is impossible");
  }

  // ---- metadata ----
  add("kv_count_exceeds_file", cut(good, 24 + 8 + 5),
      "kv_count 2 is impossible: the 13 bytes after the header hold at most 0 metadata entries");
  {
    RawFile f = baseline();
    f.kvs.resize(1);
    f.tensors.clear();
    f.data_bytes = 0;
    f.alignment = 1;
    // The key "general.architecture" is 20 bytes; the file ends after 10 of them.
    add("truncated_kv_key", cut(f.serialize(), 24 + 8 + 10),
        "key of metadata entry #0 at offset 24: length 20 runs past the end of the file (10 bytes "
        "left)");
  }
  {
    RawFile f = baseline();
    f.kvs[1].value = Bytes().u8(7).u8(0);  // 2 of the 4 bytes of a uint32, then the file ends
    f.tensors.clear();
    f.data_bytes = 0;
    f.alignment = 1;
    add_file("truncated_kv_value", f, "truncated value of key 'test.count'");
  }
  {
    RawFile f = baseline();
    f.kvs[0].key = "general.name";
    f.kvs[0].value = Bytes().u64(uint64_t{1} << 63).raw("x");
    add_file("string_length_huge", f, "length 9223372036854775808 runs past the end of the file");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"test.values", kTypeArray, Bytes().u32(kTypeU32).u64(uint64_t{1} << 61).u32(1)});
    add_file("array_count_huge", f, "array of 2305843009213693952 uint32");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"tokenizer.ggml.tokens", kTypeArray, Bytes().u32(kTypeString).u64(1000).str("a").str("b")});
    add_file("string_array_past_end", f, "array of 1000 string");
  }
  {
    RawFile f = baseline();
    f.tensors.clear();
    f.data_bytes = 0;
    f.alignment = 1;
    f.kvs.push_back(
        {"tokenizer.ggml.tokens", kTypeArray, Bytes().u32(kTypeString).u64(3).str("a").str("b").u64(50).raw("cc")});
    add_file("string_in_array_past_end", f, "length 50 runs past the end of the file");
  }
  {
    Bytes nested;
    for (int level = 0; level < 17; ++level) nested.u32(kTypeArray).u64(1);
    nested.u32(kTypeU8).u64(1).u8(1);
    RawFile f = baseline();
    f.kvs.push_back({"test.nested", kTypeArray, nested});
    add_file("array_nesting_too_deep", f, "arrays nested more than 16 levels deep");
  }
  {
    RawFile f = baseline();
    f.kvs[1].type = 13;
    add_file("unknown_value_type", f, "key 'test.count': unknown value type 13");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"test.values", kTypeArray, Bytes().u32(99).u64(1).u32(0)});
    add_file("unknown_array_element_type", f, "key 'test.values': unknown array element type 99");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"test.flag", kTypeBool, Bytes().u8(2)});
    add_file("bool_not_0_or_1", f, "key 'test.flag': bool value is 2");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"test.flags", kTypeArray, Bytes().u32(kTypeBool).u64(3).u8(1).u8(0).u8(7)});
    add_file("bool_array_element_not_0_or_1", f, "bool element 2 is 7");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"general.architecture", kTypeString, string_value("again")});
    add_file("duplicate_key", f, "duplicate key 'general.architecture' (metadata entries #0 and #2");
  }
  {
    RawFile f = baseline();
    f.kvs[1].key = "";
    add_file("empty_key", f, "key of metadata entry #1 at offset 68: empty name");
  }
  {
    RawFile f = baseline();
    f.kvs[1].key = "test.\xff\xfe";
    add_file("key_not_utf8", f, "name 'test.\\xff\\xfe' is not valid UTF-8");
  }
  {
    RawFile f = baseline();
    f.kvs[1].key = "test.\x1b[31mred";
    add_file("key_control_characters", f, "contains control characters");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"general.alignment", kTypeString, string_value("32")});
    add_file("alignment_not_uint32", f, "key 'general.alignment': expected uint32, found string");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"general.alignment", kTypeU32, u32_value(0)});
    add_file("alignment_zero", f, "invalid alignment 0");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"general.alignment", kTypeU32, u32_value(48)});
    f.alignment = 48;
    add_file("alignment_not_power_of_two", f, "invalid alignment 48");
  }
  {
    RawFile f = baseline();
    f.kvs.push_back({"general.alignment", kTypeU32, u32_value(1u << 24)});
    add_file("alignment_huge", f, "invalid alignment 16777216");
  }

  // ---- tensor infos ----
  {
    const RawFile f = baseline();
    // The name "w", n_dims and the first dimension, then the file ends.
    add("truncated_tensor_info", cut(f.serialize(), tensor_infos_offset(f) + 8 + 1 + 4 + 8 + 3),
        "truncated dimensions of tensor 'w'");
  }
  {
    RawFile f = baseline();
    f.tensors[0].name = std::string(65, 'n');
    add_file("tensor_name_too_long", f, "is 65 bytes long (at most 64 allowed)");
  }
  {
    RawFile f = baseline();
    f.tensors[0].name = "";
    add_file("tensor_name_empty", f, "name of tensor info #0 at offset 94: empty name");
  }
  {
    RawFile f = baseline();
    f.tensors.push_back({"w", {8, 2}, kTensorF32, 64, std::nullopt});
    f.data_bytes = 128;
    add_file("duplicate_tensor_name", f, "duplicate tensor name 'w' (tensor infos #0 and #1");
  }
  {
    RawFile f = baseline();
    f.tensors[0].ne = {};
    add_file("n_dims_zero", f, "tensor 'w': n_dims 0 out of range [1, 4]");
  }
  {
    RawFile f = baseline();
    f.tensors[0].ne = {8, 1, 1, 1, 2};
    add_file("n_dims_five", f, "tensor 'w': n_dims 5 out of range [1, 4]");
  }
  {
    RawFile f = baseline();
    f.tensors[0].n_dims = 1000000;
    add_file("n_dims_huge", f, "tensor 'w': n_dims 1000000 out of range [1, 4]");
  }
  {
    RawFile f = baseline();
    f.tensors[0].ne = {8, 0};
    add_file("dimension_zero", f, "tensor 'w': dimension 1 is 0");
  }
  {
    RawFile f = baseline();
    f.tensors[0].ne = {8, ~uint64_t{0}};
    add_file("dimension_negative", f, "dimension 1 is 18446744073709551615, more than INT64_MAX");
  }
  {
    RawFile f = baseline();
    f.tensors[0].ne = {uint64_t{1} << 32, uint64_t{1} << 32};
    add_file("element_count_overflow", f, "shape [4294967296, 4294967296] has more than INT64_MAX elements");
  }
  {
    RawFile f = baseline();
    f.tensors[0].ne = {uint64_t{1} << 62};
    f.tensors[0].type = kTensorF64;
    add_file("byte_size_overflow", f, "of F64 needs more than 2^64 bytes");
  }
  {
    RawFile f = baseline();
    f.tensors[0].type = 4;  // Q4_2, retired from the format
    add_file("unknown_tensor_type", f, "tensor 'w': unknown tensor type 4");
  }
  {
    RawFile f = baseline();
    f.tensors[0].type = 0xFFFFFFFFu;
    add_file("tensor_type_huge", f, "tensor 'w': unknown tensor type 4294967295");
  }
  {
    RawFile f = baseline();
    f.tensors[0].type = kTensorQ8_0;
    f.tensors[0].ne = {33, 2};
    add_file("block_size_mismatch", f, "tensor 'w': Q8_0 needs ne0 % 32 == 0, got 33");
  }

  // ---- data layout ----
  {
    RawFile f = baseline();
    f.tensors[0].offset = 8;
    f.data_bytes = 96;
    add_file("tensor_offset_unaligned", f, "tensor 'w': offset 8 is not a multiple of the alignment (32)");
  }
  {
    RawFile f = baseline();
    f.data_bytes = 40;
    add_file("truncated_tensor_data", f, "tensor 'w': data runs past the end of the file");
  }
  {
    RawFile f = baseline();
    f.tensors[0].offset = uint64_t{1} << 63;
    add_file("tensor_offset_huge", f, "tensor 'w': data runs past the end of the file");
  }
  {
    RawFile f = baseline();
    f.tensors.push_back({"v", {8}, kTensorF32, 32, std::nullopt});
    f.data_bytes = 96;
    add_file("tensors_overlap", f, "tensors 'w' and 'v' overlap");
  }
  {
    RawFile f = baseline();
    f.data_bytes = 0;
    f.alignment = 1;  // no padding either: the file ends right after the tensor infos
    std::vector<std::byte> bytes = f.serialize();
    add("data_section_missing", std::move(bytes), "truncated file: the data section starts at offset");
  }
  return cases;
}

}  // namespace gufo::corpus
