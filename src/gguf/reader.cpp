// The GGUF reader: header, metadata, tensor table, then the data layout is validated as a
// whole (alignment, bounds, overlaps). Layout: ggml docs/gguf.md, "File Structure".
// Tested by tests/unit/gguf (good round trips and the malformed corpus) and the fuzzer.
#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "gguf/byte_reader.h"
#include "gguf/file.h"
#include "gguf/text.h"
#include "gguf/value_parser.h"

namespace gufo::gguf {

// Builds a File section by section; every method leaves the reader after what it read.
class Parser {
 public:
  Parser(File& file, std::span<const std::byte> bytes) : file_(file), reader_(bytes, file.name_) {}

  Status run() {
    GUFO_RETURN_IF_ERROR(parse_header());
    GUFO_RETURN_IF_ERROR(parse_metadata());
    GUFO_RETURN_IF_ERROR(read_alignment());
    GUFO_RETURN_IF_ERROR(parse_tensor_infos());
    return place_tensor_data();
  }

 private:
  Error error(const std::string& message) const { return reader_.error(message); }

  Status parse_header() {
    GUFO_ASSIGN_OR_RETURN(std::string_view magic, reader_.read_bytes(kMagic.size(), "header (magic)"));
    if (std::memcmp(magic.data(), kMagic.data(), kMagic.size()) != 0) {
      return error("bad magic " + quote_name(magic) + " at offset 0 (expected 'GGUF'): not a GGUF file");
    }
    GUFO_ASSIGN_OR_RETURN(file_.version_, reader_.read<uint32_t>("header (version)"));
    GUFO_RETURN_IF_ERROR(check_version(file_.version_));
    GUFO_ASSIGN_OR_RETURN(tensor_count_, reader_.read<uint64_t>("header (tensor_count)"));
    GUFO_ASSIGN_OR_RETURN(kv_count_, reader_.read<uint64_t>("header (kv_count)"));

    // Cap both counts by what the rest of the file could hold before reserving anything.
    const uint64_t left = reader_.remaining();
    if (kv_count_ > left / kMinKvBytes) {
      return error("kv_count " + std::to_string(kv_count_) + " is impossible: the " + std::to_string(left) +
                   " bytes after the header hold at most " + std::to_string(left / kMinKvBytes) + " metadata entries");
    }
    if (tensor_count_ > left / kMinTensorInfoBytes ||
        kv_count_ * kMinKvBytes + tensor_count_ * kMinTensorInfoBytes > left) {
      return error("tensor_count " + std::to_string(tensor_count_) + " is impossible: the " + std::to_string(left) +
                   " bytes after the header cannot hold " + std::to_string(kv_count_) + " metadata entries and " +
                   std::to_string(tensor_count_) + " tensor infos");
    }
    return ok_status();
  }

  Status check_version(uint32_t version) const {
    if (version == 1) {
      return error(
          "GGUF version 1 is not supported (it used 32-bit counts and lengths); "
          "re-convert the model with a current converter");
    }
    // NOTE(gguf): a big-endian v3 file read as little-endian shows version 0x03000000; like
    // llama.cpp, take "low 16 bits all zero" as that sign.
    if (version != 0 && (version & 0xFFFFu) == 0) {
      return error("unsupported GGUF version " + std::to_string(version) +
                   ": the file looks big-endian; only little-endian files are supported");
    }
    if (version < kOldestVersion || version > kNewestVersion) {
      return error("unsupported GGUF version " + std::to_string(version) +
                   " (supported: " + std::to_string(kOldestVersion) + " and " + std::to_string(kNewestVersion) + ")");
    }
    return ok_status();
  }

  Status check_name(std::string_view name, uint64_t max_bytes, const std::string& what, uint64_t at) const {
    const std::string problem = name_problem(name, max_bytes);
    if (problem.empty()) return ok_status();
    return error(what + " at offset " + std::to_string(at) + ": " + problem);
  }

  Status parse_metadata() {
    file_.metadata_.reserve(kv_count_);
    for (uint64_t i = 0; i < kv_count_; ++i) {
      const uint64_t at = reader_.offset();
      const std::string what = "metadata entry #" + std::to_string(i);
      GUFO_ASSIGN_OR_RETURN(std::string_view key, reader_.read_string("key of " + what));
      GUFO_RETURN_IF_ERROR(check_name(key, kMaxKeyBytes, "key of " + what, at));
      const std::string quoted = quote_name(key);
      if (const auto it = file_.key_index_.find(key); it != file_.key_index_.end()) {
        return error("duplicate key " + quoted + " (metadata entries #" + std::to_string(it->second) + " and #" +
                     std::to_string(i) + ", offset " + std::to_string(at) + ")");
      }
      const uint64_t type_at = reader_.offset();
      GUFO_ASSIGN_OR_RETURN(uint32_t type_id, reader_.read<uint32_t>("value type of key " + quoted));
      const auto type = value_type_from_id(type_id);
      if (!type) {
        return error("key " + quoted + ": unknown value type " + std::to_string(type_id) + " at offset " +
                     std::to_string(type_at));
      }
      GUFO_ASSIGN_OR_RETURN(Value value, parse_value(reader_, *type, quoted));
      file_.key_index_.emplace(std::string(key), file_.metadata_.size());
      file_.metadata_.push_back(MetadataEntry{std::string(key), std::move(value), at});
    }
    return ok_status();
  }

  Status read_alignment() {
    const MetadataEntry* entry = file_.find(kAlignmentKey);
    if (entry == nullptr) return ok_status();  // the spec's default, kDefaultAlignment
    const std::string where = "key " + quote_name(kAlignmentKey) + ": ";
    const uint32_t* alignment = entry->value.get_if<uint32_t>();
    if (alignment == nullptr) {
      return error(where + "expected uint32, found " + entry->value.type_description());
    }
    if (!is_valid_alignment(*alignment)) {
      return error(where + "invalid alignment " + std::to_string(*alignment) + " (must be a power of two from 1 to " +
                   std::to_string(kMaxAlignment) + ")");
    }
    file_.alignment_ = *alignment;
    return ok_status();
  }

  Status parse_tensor_infos() {
    file_.tensors_.reserve(tensor_count_);
    for (uint64_t i = 0; i < tensor_count_; ++i) {
      const uint64_t at = reader_.offset();
      const std::string what = "tensor info #" + std::to_string(i);
      GUFO_ASSIGN_OR_RETURN(std::string_view name, reader_.read_string("name of " + what));
      GUFO_RETURN_IF_ERROR(check_name(name, kMaxTensorNameBytes, "name of " + what, at));
      TensorInfo tensor;
      tensor.name = std::string(name);
      const std::string quoted = quote_name(name);
      if (const auto it = file_.tensor_index_.find(name); it != file_.tensor_index_.end()) {
        return error("duplicate tensor name " + quoted + " (tensor infos #" + std::to_string(it->second) + " and #" +
                     std::to_string(i) + ", offset " + std::to_string(at) + ")");
      }
      const std::string of_tensor = " of tensor " + quoted;
      GUFO_ASSIGN_OR_RETURN(tensor.n_dims, reader_.read<uint32_t>("n_dims" + of_tensor));
      if (tensor.n_dims == 0 || tensor.n_dims > kMaxDims) {
        return error("tensor " + quoted + ": n_dims " + std::to_string(tensor.n_dims) + " out of range [1, " +
                     std::to_string(kMaxDims) + "]");
      }
      for (uint32_t dim = 0; dim < tensor.n_dims; ++dim) {
        GUFO_ASSIGN_OR_RETURN(tensor.ne[dim], reader_.read<uint64_t>("dimensions" + of_tensor));
      }
      GUFO_ASSIGN_OR_RETURN(uint32_t type_id, reader_.read<uint32_t>("type" + of_tensor));
      GUFO_ASSIGN_OR_RETURN(tensor.offset, reader_.read<uint64_t>("offset" + of_tensor));
      GUFO_RETURN_IF_ERROR(size_tensor(tensor, type_id, quoted));
      file_.tensor_index_.emplace(tensor.name, file_.tensors_.size());
      file_.tensors_.push_back(std::move(tensor));
    }
    return ok_status();
  }

  // Type, shape and byte size of one tensor. Nothing here divides by a dimension.
  Status size_tensor(TensorInfo& tensor, uint32_t type_id, const std::string& quoted) const {
    const std::string where = "tensor " + quoted + ": ";
    const auto info = dtype_info(type_id);
    if (!info) return error(where + "unknown tensor type " + std::to_string(type_id));
    tensor.type = info->type;

    // NOTE(gguf): ggml keeps dimensions as int64 and the element count must fit one too.
    constexpr uint64_t kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t n_elements = 1;
    for (uint32_t dim = 0; dim < tensor.n_dims; ++dim) {
      const uint64_t extent = tensor.ne[dim];
      // NOTE(gguf): a zero dimension is refused. ggml can hold empty tensors, but no real
      // file has one and llama.cpp's reader divides by ne[1..3], so such a file is not portable.
      if (extent == 0) {
        return error(where + "dimension " + std::to_string(dim) + " is 0 (empty tensors are not supported)");
      }
      if (extent > kMaxCount) {
        return error(where + "dimension " + std::to_string(dim) + " is " + std::to_string(extent) +
                     ", more than INT64_MAX (negative as ggml's int64)");
      }
      if (n_elements > kMaxCount / extent) {
        return error(where + "shape " + shape_text(tensor) + " has more than INT64_MAX elements");
      }
      n_elements *= extent;
    }
    tensor.n_elements = n_elements;
    if (tensor.ne[0] % info->block_elems != 0) {
      return error(where + std::string(info->name) + " needs ne0 % " + std::to_string(info->block_elems) +
                   " == 0, got " + std::to_string(tensor.ne[0]));
    }
    const uint64_t n_blocks = n_elements / info->block_elems;
    if (n_blocks > std::numeric_limits<uint64_t>::max() / info->block_bytes) {
      return error(where + "shape " + shape_text(tensor) + " of " + std::string(info->name) +
                   " needs more than 2^64 bytes");
    }
    tensor.n_bytes = n_blocks * info->block_bytes;
    return ok_status();
  }

  static std::string shape_text(const TensorInfo& tensor) {
    std::string text = "[";
    for (uint32_t dim = 0; dim < tensor.n_dims; ++dim) {
      if (dim != 0) text += ", ";
      text += std::to_string(tensor.ne[dim]);
    }
    return text + "]";
  }

  // The data section starts at the next multiple of the alignment; every tensor must lie
  // inside the file, start on the alignment, and not overlap another.
  Status place_tensor_data() {
    const uint64_t file_size = reader_.size();
    const uint64_t data_offset = align_up(reader_.offset(), file_.alignment_);
    file_.data_offset_ = std::min(data_offset, file_size);
    if (tensor_count_ == 0) return ok_status();
    if (data_offset > file_size) {
      return error("truncated file: the data section starts at offset " + std::to_string(data_offset) +
                   " (tensor infos end at " + std::to_string(reader_.offset()) + ", padded to alignment " +
                   std::to_string(file_.alignment_) + ") but the file is " + std::to_string(file_size) + " bytes");
    }
    const uint64_t data_size = file_size - data_offset;
    for (TensorInfo& tensor : file_.tensors_) {
      const std::string where = "tensor " + quote_name(tensor.name) + ": ";
      if (tensor.offset % file_.alignment_ != 0) {
        return error(where + "offset " + std::to_string(tensor.offset) + " is not a multiple of the alignment (" +
                     std::to_string(file_.alignment_) + ")");
      }
      if (tensor.offset > data_size || tensor.n_bytes > data_size - tensor.offset) {
        return error(where +
                     "data runs past the end of the file (truncated tensor data?): " + std::to_string(tensor.n_bytes) +
                     " bytes at offset " + std::to_string(tensor.offset) + " of the data section (which starts at " +
                     std::to_string(data_offset) + " and holds " + std::to_string(data_size) + " bytes)");
      }
      tensor.file_offset = data_offset + tensor.offset;
      tensor.data = file_.bytes_.data() + tensor.file_offset;
    }
    return check_overlaps();
  }

  Status check_overlaps() const {
    std::vector<const TensorInfo*> by_offset;
    by_offset.reserve(file_.tensors_.size());
    for (const TensorInfo& tensor : file_.tensors_) by_offset.push_back(&tensor);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const TensorInfo& prev = *by_offset[i - 1];
      const TensorInfo& next = *by_offset[i];
      if (prev.offset + prev.n_bytes > next.offset) {
        return error("tensors " + quote_name(prev.name) + " and " + quote_name(next.name) + " overlap: data bytes [" +
                     std::to_string(prev.offset) + ", " + std::to_string(prev.offset + prev.n_bytes) + ") and [" +
                     std::to_string(next.offset) + ", " + std::to_string(next.offset + next.n_bytes) +
                     ") of the data section");
      }
    }
    return ok_status();
  }

  File& file_;
  ByteReader reader_;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

Result<File> File::parse(std::span<const std::byte> bytes, std::string name) {
  File file;
  file.name_ = std::move(name);
  file.bytes_ = bytes;
  Parser parser(file, bytes);
  GUFO_RETURN_IF_ERROR(parser.run());
  return file;
}

Result<File> File::open(const std::string& path) {
  GUFO_ASSIGN_OR_RETURN(MappedFile mapping, MappedFile::open(path));
  const std::span<const std::byte> bytes = mapping.bytes();
  GUFO_ASSIGN_OR_RETURN(File file, parse(bytes, path));
  file.mapping_ = std::move(mapping);  // the mapping's address, and so every view, is unchanged
  return file;
}

}  // namespace gufo::gguf
