// scale_add, CPU scalar reference (see scale_add.h): plain loop, written to be read.
// Tested by tests/gpu/scale_add_test.cpp against the CUDA kernel.
#include "backend/cpu/ops/scale_add.h"

#include <cmath>
#include <functional>
#include <string>

namespace gufo::cpu {

Status scale_add_f32(std::span<const float> x, std::span<float> y, float a, float b) {
  if (x.size() != y.size()) {
    return Error{"scale_add_f32: x has " + std::to_string(x.size()) + " elements but y has " +
                 std::to_string(y.size())};
  }
  const float* x_end = x.data() + x.size();
  const float* y_end = y.data() + y.size();
  const bool same = x.data() == y.data();
  // std::less gives a total order on unrelated pointers, where operator< would not.
  if (!same && std::less<const float*>{}(x.data(), y_end) && std::less<const float*>{}(y.data(), x_end)) {
    return Error{"scale_add_f32(n=" + std::to_string(x.size()) + "): x and y partly overlap"};
  }
  // NOTE(scale_add): std::fma rounds once, as the kernel's fmaf does; a*x+b written out would
  // round twice (or once, if the compiler contracts it), and the GPU would no longer match.
  for (size_t idx = 0; idx < x.size(); ++idx) {
    y[idx] = std::fma(a, x[idx], b);
  }
  return ok_status();
}

}  // namespace gufo::cpu
