// The model's tensors as the forward pass sees them: name, type, [rows, cols] and the bytes,
// zero-copy views into the mmap'd GGUF (no second copy of the weights in memory).
// Tested by tests/unit/model/forward_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "gguf/file.h"

namespace gufo::model {

struct Weight {
  std::string name;
  DType type = DType::F32;
  int64_t rows = 1;  // ne1 (1 for vectors)
  int64_t cols = 0;  // ne0, the contiguous dimension
  size_t row_bytes = 0;
  const std::byte* data = nullptr;
  // A 3-D stack of expert matrices (ne2 = n_expert > 1, each [rows, cols], one after the
  // other); a plain matrix or vector has 1. expert() gives one expert as a 2-D weight.
  int64_t n_expert = 1;

  size_t expert_bytes() const { return static_cast<size_t>(rows) * row_bytes; }
};

// Expert `e` (0 <= e < stack.n_expert) of a stack: the same type and shape, its own rows;
// still a view into the file.
Weight expert(const Weight& stack, int64_t e);

class WeightTable {
 public:
  // Every 1-D, 2-D and 3-D tensor of `file`; the file must outlive the table.
  static Result<WeightTable> from_gguf(const gguf::File& file);

  const Weight* find(std::string_view name) const;
  const std::string& source() const { return source_; }  // the file name, for errors

 private:
  std::vector<Weight> weights_;
  std::unordered_map<std::string, size_t, gguf::StringHash, std::equal_to<>> index_;
  std::string source_;
};

}  // namespace gufo::model
