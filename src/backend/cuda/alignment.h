// The one alignment every buffer of the CUDA backend keeps (activations, scratch regions,
// weight arrays): 256 bytes, what cudaMalloc guarantees and more than any 16-byte vector load
// needs. Plain C++, for host and device code alike.
#pragma once

#include <cstddef>

namespace gufo::cuda {

inline constexpr size_t kDeviceAlign = 256;

constexpr size_t aligned_bytes(size_t bytes) { return (bytes + kDeviceAlign - 1) / kDeviceAlign * kDeviceAlign; }

}  // namespace gufo::cuda
