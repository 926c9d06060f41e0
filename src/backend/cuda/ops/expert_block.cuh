// Which expert a block of an expert-mode launch serves (ops.h, ExpertRows), shared by the
// matmul kernels: block z, or the z-th expert that has rows when the launch has a grid of
// active experts only.
#pragma once

#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

// The expert of this block, or -1: no expert (the block has nothing to do).
__device__ inline int block_expert(const ExpertRows& experts) {
  const int z = static_cast<int>(blockIdx.z);
  return experts.active != nullptr ? experts.active[z] : z;
}

}  // namespace gufo::cuda
