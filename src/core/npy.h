// NumPy .npy files of float32 matrices, the format of reference logits ([n_tokens, n_vocab],
// `gufo quality --reference`). Reads v1/v2 headers, little-endian '<f4', C order only.
// Tested by tests/unit/core_test.cpp (NpyTest).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gufo {

struct NpyMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<float> data;  // rows * cols, row-major
};

Result<NpyMatrix> read_npy(const std::string& path);
// Writes through a temporary file and a rename, so a failure leaves nothing half-written.
Status write_npy(const std::string& path, const NpyMatrix& matrix);

}  // namespace gufo
