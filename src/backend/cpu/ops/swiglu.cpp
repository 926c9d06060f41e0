// swiglu, scalar reference (see ops.h): silu(g) = g / (1 + e^-g).
#include <cmath>

#include "backend/cpu/ops/ops.h"

namespace gufo::cpu {

void swiglu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

}  // namespace gufo::cpu
