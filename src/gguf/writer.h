// gguf::Writer: builds a GGUF v3 file from ordered metadata and tensors, laid out the way
// llama.cpp and gguf-py write (and llama.cpp requires): tensor data in the order added, each
// at an offset that is a multiple of the alignment, padded with zeros, the last one too.
//
// Writing is all-or-nothing: everything is validated first, the bytes go to "OUT.tmp", and
// only a complete, synced file is renamed to OUT. A failure never leaves a partial OUT nor
// clobbers an existing one, and the writer refuses to overwrite any of its inputs.
// Tested by tests/unit/gguf/writer_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "gguf/value.h"

namespace gufo::gguf {

// Fills `out`, which has exactly the tensor's byte size. Lets a converter produce one tensor
// at a time instead of holding them all.
using TensorFill = std::function<Status(std::span<std::byte> out)>;

struct TensorSpec {
  std::string name;
  DType type = DType::F32;
  std::vector<uint64_t> shape;      // ne0 (the contiguous dimension) first, 1 to 4 entries
  std::span<const std::byte> data;  // the bytes, kept alive by the caller until written...
  TensorFill fill;                  // ...or, when set, a function that produces them
};

struct WriteOptions {
  // Files the output must not replace (compared as files, so links and other spellings of
  // the same path are caught).
  std::vector<std::string> input_paths;
};

class Writer {
 public:
  // Sets a metadata value. A new key goes last; an existing key keeps its place and gets
  // the new value (so copying a file's metadata and then overriding a key is easy).
  void set(std::string key, Value value);
  // Adds a tensor; its data goes after the data of the tensors added before it.
  void add_tensor(TensorSpec tensor);

  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const std::vector<TensorSpec>& tensors() const { return tensors_; }

  // Writes the file at `path` (see the file comment). Errors start with `path`.
  Status write(const std::string& path, const WriteOptions& options = {}) const;
  // The same bytes, in memory (tests, fuzzing). `name` prefixes errors.
  Result<std::vector<std::byte>> to_bytes(const std::string& name = "<memory>") const;

 private:
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<TensorSpec> tensors_;
};

}  // namespace gufo::gguf
