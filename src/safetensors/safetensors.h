// Safetensors reader: a checkpoint folder's *.safetensors files mapped read-only, each
// header (8-byte little-endian length + JSON) parsed and every dtype, shape and data offset
// checked against the file; sharded checkpoints through model.safetensors.index.json.
// Format: huggingface/safetensors README ("Format"). Tested by tests/unit/safetensors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "gguf/mapped_file.h"

namespace gufo::safetensors {

// One tensor of a safetensors file: a zero-copy view into the mapped file.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;         // F32, F16 or BF16 (the only dtypes accepted)
  std::vector<uint64_t> shape;      // PyTorch order: the last dimension is contiguous
  std::span<const std::byte> data;  // row-major, little-endian, exactly elements * size

  uint64_t n_elements() const;
};

// NOTE(safetensors): the spec caps the header at 100 MB (the Python/Rust readers refuse
// more); a bigger length is a corrupt or hostile file, refused before reading anything.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Parses a whole safetensors file held in `bytes` (mapped or in memory). Views point into
// `bytes`. Errors start with `name` and name the tensor: "x.safetensors: tensor 'w': ...".
Result<std::vector<TensorView>> parse(std::span<const std::byte> bytes, const std::string& name);

// Every tensor of a checkpoint folder, by name, with the files mapped for as long as the
// Checkpoint lives (views stay valid across moves).
class Checkpoint {
 public:
  // Opens model.safetensors.index.json (its weight_map names the shards) when present,
  // else model.safetensors. Every tensor name must be unique across shards and, with an
  // index, each tensor must live in the shard the index says.
  static Result<Checkpoint> open(const std::string& dir);

  const TensorView* find(const std::string& name) const;
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  const std::vector<std::string>& paths() const { return paths_; }

 private:
  std::vector<std::unique_ptr<gguf::MappedFile>> files_;
  std::vector<std::string> paths_;
  std::map<std::string, TensorView> tensors_;
};

}  // namespace gufo::safetensors
