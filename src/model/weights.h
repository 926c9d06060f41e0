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
};

class WeightTable {
 public:
  // Every 1-D and 2-D tensor of `file`; the file must outlive the table.
  static Result<WeightTable> from_gguf(const gguf::File& file);

  const Weight* find(std::string_view name) const;
  const std::string& source() const { return source_; }  // the file name, for errors

 private:
  std::vector<Weight> weights_;
  std::unordered_map<std::string, size_t, gguf::StringHash, std::equal_to<>> index_;
  std::string source_;
};

}  // namespace gufo::model
