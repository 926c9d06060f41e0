// SwiGLU's element step, shared by swiglu (row_ops.cu) and swiglu_quant (fused_runs.cu) so
// that both give the CPU's float operations (backend/cpu/ops/swiglu.cpp): silu(g) * u.
#pragma once

namespace gufo::cuda {

__device__ inline float silu_times(float g, float u) { return g / (1.0f + expf(-g)) * u; }

}  // namespace gufo::cuda
