// CUDA devices and library versions, as `gufo diagnose` reports them. This header is plain C++
// on purpose: builds without CUDA include it for the types; only device_info.cpp needs the
// toolkit. Tested by tests/gpu/device_info_test.cpp (label gpu).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gufo::cuda {

struct DeviceInfo {
  int index = 0;     // the runtime's device ordinal
  std::string name;  // e.g. "NVIDIA H200"
  int cc_major = 0;  // compute capability, e.g. 9.0
  int cc_minor = 0;
  uint64_t total_memory_bytes = 0;
  int multiprocessor_count = 0;
  std::string pci_bus_id;  // e.g. "0000:18:00.0"
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi
};

// Versions of what is loaded at run time (which may differ from the headers built against).
// 0 means "cannot say" (for `driver`: no NVIDIA driver installed).
struct LibraryVersions {
  int driver = 0;         // cudaDriverGetVersion: 1000*major + 10*minor, e.g. 13000
  int runtime = 0;        // cudaRuntimeGetVersion, same encoding
  int cublas = 0;         // cublasGetProperty: 10000*major + 100*minor + patch, e.g. 130100
  uint64_t cublaslt = 0;  // cublasLtGetVersion, same encoding as cublas
};

// Never fails: versions it cannot read stay 0.
LibraryVersions query_library_versions();

// Every visible device, or an error such as "no CUDA device: CUDA driver version is
// insufficient for CUDA runtime version" when there is no driver or no device.
Result<std::vector<DeviceInfo>> query_devices();

// 13000 -> "13.0"; 0 -> "".
inline std::string format_cuda_version(int version) {
  if (version <= 0) return "";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// 130100 -> "13.1.0"; 0 -> "".
inline std::string format_blas_version(uint64_t version) {
  if (version == 0) return "";
  return std::to_string(version / 10000) + "." + std::to_string(version % 10000 / 100) + "." +
         std::to_string(version % 100);
}

}  // namespace gufo::cuda
