// Safetensors parsing and checkpoint folders (see safetensors.h). Layout, from the
// huggingface/safetensors README: u64 little-endian N, then N bytes of UTF-8 JSON
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the byte
// buffer the offsets index (relative to its start). Tested by tests/unit/safetensors.
#include "safetensors/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace gufo::safetensors {
namespace {

using nlohmann::json;

static_assert(std::endian::native == std::endian::little,
              "the safetensors reader assumes a little-endian host (the format is little-endian)");

std::string quote(const std::string& text) { return "'" + text + "'"; }

// NOTE(safetensors): dtype names from the format's Rust `Dtype` enum; only the float types
// a converter needs are accepted, the rest are named in the error.
Result<DType> dtype_from_safetensors(const std::string& text, const std::string& where) {
  if (text == "F32") return DType::F32;
  if (text == "F16") return DType::F16;
  if (text == "BF16") return DType::BF16;
  return Error{where + "dtype " + text + " is not supported (supported: F32, F16, BF16)"};
}

// A non-negative JSON integer as uint64, or nullopt.
std::optional<uint64_t> as_u64(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return std::nullopt;
}

Result<TensorView> parse_entry(const std::string& tensor_name, const json& entry, std::span<const std::byte> buffer,
                               const std::string& where) {
  if (!entry.is_object()) return Error{where + "expected an object with dtype, shape, data_offsets"};
  const auto dtype_it = entry.find("dtype");
  if (dtype_it == entry.end() || !dtype_it->is_string()) return Error{where + "dtype: expected a string"};
  TensorView view;
  view.name = tensor_name;
  GUFO_ASSIGN_OR_RETURN(view.dtype, dtype_from_safetensors(dtype_it->get<std::string>(), where));

  const auto shape_it = entry.find("shape");
  if (shape_it == entry.end() || !shape_it->is_array()) {
    return Error{where + "shape: expected an array of non-negative integers"};
  }
  // NOTE(safetensors): bound the rank so a hostile header cannot make us allocate much;
  // GGUF holds at most 4 dimensions and no checkpoint we convert has more than 3.
  constexpr size_t kMaxRank = 8;
  if (shape_it->size() > kMaxRank) {
    return Error{where + "shape has " + std::to_string(shape_it->size()) + " dimensions (at most " +
                 std::to_string(kMaxRank) + ")"};
  }
  uint64_t n_elements = 1;
  for (const json& extent_json : *shape_it) {
    const auto extent = as_u64(extent_json);
    if (!extent) return Error{where + "shape: expected non-negative integers, found " + shape_it->dump()};
    if (*extent != 0 && n_elements > std::numeric_limits<uint64_t>::max() / 8 / *extent) {
      return Error{where + "shape " + shape_it->dump() + " has too many elements"};
    }
    n_elements *= *extent;
    view.shape.push_back(*extent);
  }

  const auto offsets_it = entry.find("data_offsets");
  if (offsets_it == entry.end() || !offsets_it->is_array() || offsets_it->size() != 2 || !as_u64((*offsets_it)[0]) ||
      !as_u64((*offsets_it)[1])) {
    return Error{where + "data_offsets: expected [begin, end] of non-negative integers"};
  }
  const uint64_t begin = *as_u64((*offsets_it)[0]);
  const uint64_t end = *as_u64((*offsets_it)[1]);
  if (begin > end) {
    return Error{where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 "]: begin is after end"};
  }
  if (end > buffer.size()) {
    return Error{where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                 "] run past the end of the data (" + std::to_string(buffer.size()) + " bytes)"};
  }
  const uint64_t element_bytes = dtype_info(view.dtype).block_bytes;
  if (end - begin != n_elements * element_bytes) {
    return Error{where + "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
                 std::to_string(end - begin) + " bytes, but " + dtype_it->get<std::string>() + " of shape " +
                 shape_it->dump() + " needs " + std::to_string(n_elements * element_bytes)};
  }
  view.data = buffer.subspan(begin, end - begin);
  return view;
}

Result<json> read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path.string() + ": cannot open"};
  std::stringstream buffer;
  buffer << in.rdbuf();
  json parsed = json::parse(buffer.str(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return Error{path.string() + ": not valid JSON"};
  if (!parsed.is_object()) return Error{path.string() + ": expected a JSON object at the top"};
  return parsed;
}

}  // namespace

uint64_t TensorView::n_elements() const {
  uint64_t n = 1;
  for (uint64_t extent : shape) n *= extent;
  return n;
}

Result<std::vector<TensorView>> parse(std::span<const std::byte> bytes, const std::string& name) {
  const std::string prefix = name + ": ";
  if (bytes.size() < 8) {
    return Error{prefix + "file of " + std::to_string(bytes.size()) +
                 " bytes is too short for a safetensors header (8-byte length first)"};
  }
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data(), sizeof header_bytes);
  if (header_bytes > kMaxHeaderBytes || header_bytes > bytes.size() - 8) {
    return Error{prefix + "header length " + std::to_string(header_bytes) + " is past the end of the file (" +
                 std::to_string(bytes.size()) + " bytes) or above the " + std::to_string(kMaxHeaderBytes) +
                 "-byte limit"};
  }
  const auto* text = reinterpret_cast<const char*>(bytes.data() + 8);
  const std::string_view header(text, header_bytes);

  // NOTE(safetensors): nlohmann keeps the last of duplicate keys silently; the callback
  // sees every top-level key so a duplicate tensor name is an error instead.
  std::set<std::string> seen;
  std::string duplicate;
  const json::parser_callback_t on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && parsed.is_string()) {
      if (!seen.insert(parsed.get<std::string>()).second && duplicate.empty()) {
        duplicate = parsed.get<std::string>();
      }
    }
    return true;
  };
  json root = json::parse(header.begin(), header.end(), on_event, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error{prefix + "header is not valid JSON"};
  if (!root.is_object()) return Error{prefix + "header: expected a JSON object"};
  if (!duplicate.empty()) return Error{prefix + "tensor " + quote(duplicate) + ": duplicate name"};

  const std::span<const std::byte> buffer = bytes.subspan(8 + header_bytes);
  std::vector<TensorView> views;
  for (const auto& [key, entry] : root.items()) {
    if (key == "__metadata__") continue;  // free-form string map; nothing we need
    GUFO_ASSIGN_OR_RETURN(TensorView view, parse_entry(key, entry, buffer, prefix + "tensor " + quote(key) + ": "));
    views.push_back(std::move(view));
  }

  // Tensors must not share bytes (the format forbids it; a converter would silently read
  // one tensor as another).
  std::vector<const TensorView*> by_offset;
  by_offset.reserve(views.size());
  for (const TensorView& view : views) by_offset.push_back(&view);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const TensorView* a, const TensorView* b) { return a->data.data() < b->data.data(); });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const TensorView& before = *by_offset[i - 1];
    const TensorView& after = *by_offset[i];
    if (before.data.data() + before.data.size() > after.data.data()) {
      return Error{prefix + "tensor " + quote(after.name) + ": data overlaps tensor " + quote(before.name)};
    }
  }
  return views;
}

const TensorView* Checkpoint::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Result<Checkpoint> Checkpoint::open(const std::string& dir) {
  const std::filesystem::path folder(dir);
  const std::filesystem::path index_path = folder / "model.safetensors.index.json";
  const std::filesystem::path single_path = folder / "model.safetensors";

  Checkpoint checkpoint;
  // shard file name -> tensor names the index assigns to it (empty without an index)
  std::map<std::string, std::set<std::string>> index_shards;
  std::error_code ec;
  const bool has_index = std::filesystem::exists(index_path, ec);
  if (has_index) {
    GUFO_ASSIGN_OR_RETURN(json index, read_json_file(index_path));
    const auto map_it = index.find("weight_map");
    if (map_it == index.end() || !map_it->is_object() || map_it->empty()) {
      return Error{index_path.string() + ": weight_map: expected a non-empty object of tensor -> file"};
    }
    for (const auto& [tensor_name, shard] : map_it->items()) {
      if (!shard.is_string()) {
        return Error{index_path.string() + ": weight_map[" + quote(tensor_name) + "]: expected a file name"};
      }
      const std::string shard_name = shard.get<std::string>();
      // NOTE(safetensors): shards must sit in the folder itself; a path in the index could
      // otherwise point the converter at any file on the machine.
      if (shard_name.empty() || shard_name.find('/') != std::string::npos || shard_name == "." || shard_name == "..") {
        return Error{index_path.string() + ": weight_map[" + quote(tensor_name) + "]: " + quote(shard_name) +
                     " is not a file name in the folder"};
      }
      index_shards[shard_name].insert(tensor_name);
    }
  } else if (std::filesystem::exists(single_path, ec)) {
    index_shards["model.safetensors"];
  } else {
    return Error{dir + ": no model.safetensors or model.safetensors.index.json"};
  }

  for (const auto& [shard_name, expected] : index_shards) {
    const std::string path = (folder / shard_name).string();
    GUFO_ASSIGN_OR_RETURN(gguf::MappedFile mapped, gguf::MappedFile::open(path));
    auto owned = std::make_unique<gguf::MappedFile>(std::move(mapped));
    GUFO_ASSIGN_OR_RETURN(std::vector<TensorView> views, parse(owned->bytes(), path));
    for (TensorView& view : views) {
      if (has_index && expected.count(view.name) == 0) {
        return Error{path + ": tensor " + quote(view.name) + ": not listed for this shard in " + index_path.string()};
      }
      const std::string view_name = view.name;
      if (!checkpoint.tensors_.emplace(view_name, std::move(view)).second) {
        return Error{path + ": tensor " + quote(view_name) + ": also present in another shard"};
      }
    }
    for (const std::string& tensor_name : expected) {
      if (checkpoint.tensors_.count(tensor_name) == 0) {
        return Error{index_path.string() + ": tensor " + quote(tensor_name) + ": listed in " + shard_name +
                     " but not found there"};
      }
    }
    checkpoint.files_.push_back(std::move(owned));
    checkpoint.paths_.push_back(path);
  }
  return checkpoint;
}

}  // namespace gufo::safetensors
