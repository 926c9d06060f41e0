// What this binary was built from and with: version, git revision, compiler, C++ library and
// CUDA toolkit. Every value is detected by cmake/GufoBuildInfo.cmake, never typed in.
// Tested by tests/unit/diagnose (values checked against the compiler's own macros).
#pragma once

#include <string_view>

namespace gufo::diagnose {

// All strings are static; a field that does not apply (CUDA in a CPU-only build) is empty.
struct BuildInfo {
  std::string_view version;       // PROJECT_VERSION, e.g. "0.1.0"
  std::string_view git_revision;  // `git describe --always --dirty --abbrev=12` at build time,
                                  // or "unknown" outside a git checkout
  std::string_view build_type;    // CMAKE_BUILD_TYPE, e.g. "RelWithDebInfo"
  std::string_view preset;        // GUFO_PRESET: the CMake preset, "none" without one

  std::string_view cxx_compiler_id;       // CMAKE_CXX_COMPILER_ID: "GNU", "Clang", ...
  std::string_view cxx_compiler_version;  // CMAKE_CXX_COMPILER_VERSION, e.g. "12.2.0"
  std::string_view cxx_compiler_path;     // CMAKE_CXX_COMPILER as configured
  std::string_view cxx_compiler_banner;   // first line of `<compiler> --version`
  std::string_view cxx_flags;             // CMAKE_CXX_FLAGS + the build type's flags
  std::string_view stdlib_name;           // "libstdc++" or "libc++", read from its headers
  std::string_view stdlib_version;        // e.g. "12 (20220819)" for libstdc++

  bool with_cuda = false;                      // configured with GUFO_CUDA
  std::string_view nvcc_version;               // CMAKE_CUDA_COMPILER_VERSION, e.g. "13.0.88"
  std::string_view nvcc_path;                  // CMAKE_CUDA_COMPILER
  std::string_view nvcc_banner;                // "Cuda compilation tools, release 13.0, V13.0.88"
  std::string_view cuda_toolkit_version;       // CUDAToolkit_VERSION
  std::string_view cudart_header_version;      // CUDART_VERSION of cuda_runtime_api.h, e.g. "13000"
  std::string_view cublas_header_version;      // CUBLAS_VER_* of cublas_api.h, e.g. "13.1.0"
  std::string_view cuda_host_compiler;         // CMAKE_CUDA_HOST_COMPILER
  std::string_view cuda_host_compiler_banner;  // first line of `<host compiler> --version`
  std::string_view cuda_architectures;         // CMAKE_CUDA_ARCHITECTURES, comma-separated
};

const BuildInfo& build_info();

}  // namespace gufo::diagnose
