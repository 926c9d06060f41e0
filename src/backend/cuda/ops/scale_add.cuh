// scale_add on the GPU: y[i] = fma(a, x[i], b) over n f32 elements; the proof that the CUDA
// toolchain builds, links and runs. CPU reference (the oracle): backend/cpu/ops/scale_add.h.
// Tested by tests/gpu/scale_add_test.cpp (label gpu), bit-exact against the reference.
#pragma once

#include <cstdint>

#include "backend/cuda/compat.cuh"
#include "core/result.h"

namespace gufo::cuda {

// x: [n] f32, device memory; y: [n] f32, device memory. y may be x itself (in place) but must
// not partly overlap it. Everything is checked before launching; an error names the kernel,
// the problem size and what is wrong. Returns once the kernel is queued on `stream`, so a
// fault inside the kernel surfaces at the caller's next synchronisation.
Status scale_add_f32(const float* x, float* y, int64_t n, float a, float b, gpu::stream_t stream = nullptr);

}  // namespace gufo::cuda
