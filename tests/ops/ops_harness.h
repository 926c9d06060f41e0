// The operator harness of tests/ops: every CUDA op against its CPU twin (backend/cpu, the
// oracle) over many shapes and every weight type. Helpers here: random inputs, weights in
// GGUF form, and comparisons with declared tolerances (device buffers and the skip without a
// GPU come from tests/gpu/device_buffer.h). Each test counts its cases and fails when it ran
// none.
// Run on a GPU machine: ctest --preset gpu-fast (scripts/gpu-check.sh does).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cuda/compat.cuh"
#include "core/dtype.h"
#include "model/weights.h"
#include "quant/quant.h"
#include "tests/gpu/device_buffer.h"

namespace gufo::ops_test {

// The device helpers are tests/gpu's (have_device, GUFO_REQUIRE_GPU, DeviceBuffer).
using gpu_test::DeviceBuffer;

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// A weight [rows, cols] (or a stack of n_expert of them) of `type` from random values, with
// its bytes, as a GGUF file holds it. With `distinct_rows` > 0 only that many rows of each
// expert are drawn and quantized, and the expert's other rows repeat them: a launch's layout
// depends on the shape and type, not the values, and 65,536 rows of their own would take the
// CPU tens of seconds.
struct HostWeight {
  std::vector<std::byte> bytes;
  model::Weight weight;
};

inline HostWeight random_weight(DType type, int64_t rows, int64_t cols, std::mt19937& rng, int64_t n_expert = 1,
                                float scale = 0.05f, int64_t distinct_rows = 0) {
  HostWeight w;
  const size_t row_bytes = dtype_row_bytes(dtype_info(type), static_cast<uint64_t>(cols));
  const int64_t drawn = distinct_rows > 0 && distinct_rows < rows ? distinct_rows : rows;
  w.bytes.resize(row_bytes * static_cast<size_t>(rows * n_expert));
  for (int64_t e = 0; e < n_expert; ++e) {
    std::byte* expert = w.bytes.data() + static_cast<size_t>(e * rows) * row_bytes;
    for (int64_t r = 0; r < drawn; ++r) {
      const std::vector<float> values = random_floats(static_cast<size_t>(cols), rng, scale);
      const Status s = quant::quantize_row(type, values.data(), cols, expert + r * row_bytes, row_bytes);
      EXPECT_TRUE(s.ok()) << s.error().message;
    }
    for (int64_t r = drawn; r < rows; ++r) {
      std::copy_n(expert + (r % drawn) * row_bytes, row_bytes, expert + r * row_bytes);
    }
  }
  w.weight.name = "test." + std::string(dtype_name(type));
  w.weight.type = type;
  w.weight.rows = rows;
  w.weight.cols = cols;
  w.weight.row_bytes = row_bytes;
  w.weight.data = w.bytes.data();
  w.weight.n_expert = n_expert;
  return w;
}

// Largest |got - want| and the worst |got - want| / max(|want|, floor) over the elements.
struct Difference {
  double max_abs = 0.0;
  double max_rel = 0.0;
  size_t mismatches = 0;  // elements not bit-identical
  bool nan = false;       // got has a NaN where want has none
};

inline Difference compare(const std::vector<float>& got, const std::vector<float>& want, double floor = 1e-3) {
  Difference d;
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (std::isnan(got[i]) && !std::isnan(want[i])) d.nan = true;
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    if (a != b) ++d.mismatches;
    const double diff = std::abs(static_cast<double>(got[i]) - want[i]);
    d.max_abs = std::max(d.max_abs, diff);
    d.max_rel = std::max(d.max_rel, diff / std::max(std::abs(static_cast<double>(want[i])), floor));
  }
  return d;
}

// Normalized mean squared error sum((got - want)^2) / sum(want^2), as test-backend-ops uses.
inline double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    norm += static_cast<double>(want[i]) * want[i];
  }
  return norm > 0.0 ? err / norm : err;
}

}  // namespace gufo::ops_test
