// scale_add, CPU scalar reference: y[i] = fma(a, x[i], b) over f32. This is the oracle the GPU
// kernel (backend/cuda/ops/scale_add.cu) must match bit for bit.
// Tested by tests/gpu/scale_add_test.cpp.
#pragma once

#include <span>

#include "core/result.h"

namespace gufo::cpu {

// x: [n], y: [n]. y may be x itself (in place) but must not partly overlap it.
Status scale_add_f32(std::span<const float> x, std::span<float> y, float a, float b);

}  // namespace gufo::cpu
