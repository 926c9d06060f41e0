// gguf::File: a parsed GGUF file (v2 or v3): header, metadata in file order with typed
// getters, and the tensor table with zero-copy views into the read-only mapping.
//
// Design, in brief:
//  - open() maps the file read-only; parse() reads bytes the caller owns (fuzzer, tests).
//  - Everything is validated up front: every count, length and offset is checked against the
//    bytes left before anything is allocated, so a File that exists is consistent and its
//    tensor views are always inside the file. No input can crash or hang the parser.
//  - Strings and arrays of metadata are copied (they are small); tensor data never is.
//  - Errors name the file, the entry (key or tensor), the problem and usually the offset.
// Tested by tests/unit/gguf/*_test.cpp and fuzzed by tests/fuzz/gguf_reader_fuzz.cpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "gguf/format.h"
#include "gguf/mapped_file.h"
#include "gguf/value.h"

namespace gufo::gguf {

struct MetadataEntry {
  std::string key;
  Value value;
  uint64_t file_offset = 0;  // where the entry (its key length) starts in the file
};

struct TensorInfo {
  std::string name;
  DType type = DType::F32;
  uint32_t n_dims = 0;
  std::array<uint64_t, kMaxDims> ne = {1, 1, 1, 1};  // ne[0] is the contiguous dimension
  uint64_t offset = 0;                               // from the start of the data section, as stored in the file
  uint64_t file_offset = 0;                          // from the start of the file
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  const std::byte* data = nullptr;  // points into the file's bytes; valid while the File lives

  std::span<const uint64_t> shape() const { return {ne.data(), n_dims}; }
  std::span<const std::byte> bytes() const { return {data, static_cast<size_t>(n_bytes)}; }
};

// Transparent hashing so lookups by string_view need no temporary std::string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};
using NameIndex = std::unordered_map<std::string, size_t, StringHash, std::equal_to<>>;

class File {
 public:
  // Maps `path` read-only and parses it. Errors start with `path`.
  static Result<File> open(const std::string& path);
  // Parses bytes the caller owns; they must outlive the File (its tensor views point into
  // them). `name` prefixes errors, as a path would.
  static Result<File> parse(std::span<const std::byte> bytes, std::string name);

  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t file_size_bytes() const { return bytes_.size(); }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section
  std::span<const std::byte> bytes() const { return bytes_; }

  // Metadata, in file order.
  const std::vector<MetadataEntry>& metadata() const { return metadata_; }
  const MetadataEntry* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed getters. A missing key or a different type is an error such as
  // "model.gguf: key 'general.alignment': expected uint32, found string".
  Result<const Value*> get(std::string_view key) const;
  Result<uint8_t> get_u8(std::string_view key) const { return get_scalar<uint8_t>(key); }
  Result<int8_t> get_i8(std::string_view key) const { return get_scalar<int8_t>(key); }
  Result<uint16_t> get_u16(std::string_view key) const { return get_scalar<uint16_t>(key); }
  Result<int16_t> get_i16(std::string_view key) const { return get_scalar<int16_t>(key); }
  Result<uint32_t> get_u32(std::string_view key) const { return get_scalar<uint32_t>(key); }
  Result<int32_t> get_i32(std::string_view key) const { return get_scalar<int32_t>(key); }
  Result<uint64_t> get_u64(std::string_view key) const { return get_scalar<uint64_t>(key); }
  Result<int64_t> get_i64(std::string_view key) const { return get_scalar<int64_t>(key); }
  Result<float> get_f32(std::string_view key) const { return get_scalar<float>(key); }
  Result<double> get_f64(std::string_view key) const { return get_scalar<double>(key); }
  Result<bool> get_bool(std::string_view key) const { return get_scalar<bool>(key); }
  // A view into the File's copy of the string.
  Result<std::string_view> get_string(std::string_view key) const;
  Result<const Array*> get_array(std::string_view key) const;
  // An array whose elements must be T (not bool: std::vector<bool> has no span; use
  // get_array and Array::get_if<bool>). Errors say "expected array of uint32, found ...".
  template <class T>
  Result<std::span<const T>> get_array_of(std::string_view key) const;

  // Tensors, in file order, and by name.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  Result<const TensorInfo*> get_tensor(std::string_view name) const;

 private:
  friend class Parser;
  File() = default;

  template <class T>
  Result<T> get_scalar(std::string_view key) const;
  Error type_error(std::string_view key, std::string_view expected, const Value& found) const;

  std::string name_;
  MappedFile mapping_;  // empty when parsing caller-owned bytes
  std::span<const std::byte> bytes_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<MetadataEntry> metadata_;
  std::vector<TensorInfo> tensors_;
  NameIndex key_index_;
  NameIndex tensor_index_;
};

template <class T>
Result<T> File::get_scalar(std::string_view key) const {
  GUFO_ASSIGN_OR_RETURN(const Value* value, get(key));
  if (const T* typed = value->get_if<T>()) return *typed;
  return type_error(key, value_type_name(value_type_of<T>()), *value);
}

template <class T>
Result<std::span<const T>> File::get_array_of(std::string_view key) const {
  static_assert(!std::is_same_v<T, bool>, "bool arrays: use get_array() and get_if<bool>()");
  GUFO_ASSIGN_OR_RETURN(const Array* array, get_array(key));
  if (const std::vector<T>* elements = array->get_if<T>()) {
    return std::span<const T>(elements->data(), elements->size());
  }
  const std::string expected = "array of " + std::string(value_type_name(value_type_of<T>()));
  return type_error(key, expected, *get(key).value());
}

}  // namespace gufo::gguf
