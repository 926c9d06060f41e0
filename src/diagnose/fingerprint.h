// Machine fingerprint: one stable hash over the machine and the toolchain this binary was built
// with, so two benchmark or quality results can be told apart by where and how they were made.
// Tested by tests/unit/diagnose (deterministic; any single input change changes the hash).
//
// The inputs, hashed in exactly this order (name = value, both as text):
//   fingerprint.scheme            "gufo-fingerprint-v1"; bump the version when this list changes
//   cpu.model                     /proc/cpuinfo "model name"
//   cpu.logical_cores             sysconf(_SC_NPROCESSORS_ONLN)
//   cpu.simd                      detect_simd_features(), comma-separated, "none" when empty
//   memory.total_gib              MemTotal rounded to the nearest GiB (it moves by a few MiB
//                                 between kernels and boots; on a VM whose memory is
//                                 hot-plugged as it is used, it moves more, and so does this)
//   gpu.count                     devices this binary sees (0 in a CPU-only build)
//   gpu.<i>.name                  for each device i = 0, 1, ...:
//   gpu.<i>.compute_capability      "9.0"
//   gpu.<i>.memory_mib              total memory in MiB
//   gpu.<i>.uuid                    "GPU-..."
//   gpu.driver_version            CUDA driver API version ("13.0"), "none" without CUDA/driver
//   gpu.kernel_driver_version     NVIDIA kernel module version, "none" when not loaded
//   gpu.cublas_runtime_version    libcublas loaded at run time, "none" without CUDA
//   build.cxx_compiler_id         CMAKE_CXX_COMPILER_ID
//   build.cxx_compiler_version    CMAKE_CXX_COMPILER_VERSION
//   build.cxx_compiler_banner     first line of `<compiler> --version` (vendor patch level)
//   build.stdlib                  "<name> <version>", e.g. "libstdc++ 12 (20220819)"
//   build.cuda_toolkit_version    CUDAToolkit_VERSION, "none" in a CPU-only build
//   build.cublas_header_version   cublas_api.h version, "none" in a CPU-only build
//   build.cuda_architectures      CMAKE_CUDA_ARCHITECTURES, "none" in a CPU-only build
//   build.type                    CMAKE_BUILD_TYPE
// Deliberately left out: the gufo version and git revision (the fingerprint names a machine
// and toolchain, not a source tree), hostnames, free memory, and error messages.
//
// Hash: 64-bit FNV-1a over each name and value written as a netstring ("<length>:<bytes>,"),
// so no choice of values can make two different input lists hash the same bytes. Printed as
// 16 lower-case hex digits.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/fnv1a.h"
#include "diagnose/build_info.h"
#include "diagnose/system_info.h"

namespace gufo::diagnose {

struct FingerprintInput {
  std::string name;
  std::string value;
};

struct Fingerprint {
  std::vector<FingerprintInput> inputs;  // in hashing order
  std::string hash;                      // 16 hex digits
};

// The hash (core/fnv1a.h), named here as the fingerprint's tests and diagnose's report use it.
using gufo::fnv1a_64;

std::vector<FingerprintInput> fingerprint_inputs(const BuildInfo& build, const SystemInfo& system);
std::string fingerprint_hash(const std::vector<FingerprintInput>& inputs);
Fingerprint machine_fingerprint(const BuildInfo& build, const SystemInfo& system);

}  // namespace gufo::diagnose
