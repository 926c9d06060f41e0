// The CUDA backend: the whole model graph on one GPU (weights uploaded once, paged KV cache
// and activations in device memory), every op with a CPU twin it is tested against, and a
// row's numbers independent of its batch (integer matmuls in the CPU's accumulation order,
// attention split at fixed absolute positions). Plain C++ so that the registry (backend/
// registry.cpp) includes it without the CUDA toolkit's headers.
// Tested by tests/gpu/cuda_forward_test.cpp and tests/ops.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "core/result.h"

namespace gufo::cuda {

// The backend on device `index`, or an error naming why not (no driver, no such device, an
// architecture this build has no code for).
Result<std::unique_ptr<backend::Backend>> create_cuda_backend(int index);

}  // namespace gufo::cuda
