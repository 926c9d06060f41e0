// The machine `gufo diagnose` runs on: OS, CPU (model, cores, SIMD found at run time), memory
// and, in a CUDA build, GPUs, driver and the CUDA libraries actually loaded. Collecting never
// fails: whatever cannot be read is reported as unknown. Tested by tests/unit/diagnose.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "backend/cuda/device_info.h"  // plain C++ types, usable without CUDA

namespace gufo::diagnose {

struct OsInfo {
  std::string name;            // uname sysname, e.g. "Linux"
  std::string kernel_release;  // uname release
  std::string kernel_version;  // uname version
  std::string distribution;    // /etc/os-release PRETTY_NAME, "" when absent
};

struct CpuInfo {
  std::string model;                  // /proc/cpuinfo "model name", "unknown" when absent
  std::string architecture;           // uname machine, e.g. "x86_64"
  unsigned hardware_concurrency = 0;  // std::thread::hardware_concurrency()
  long online_cores = 0;              // sysconf(_SC_NPROCESSORS_ONLN): logical cores online
  long configured_cores = 0;          // sysconf(_SC_NPROCESSORS_CONF)
  long usable_cores = 0;              // sched_getaffinity: the cores this process may use
  std::vector<std::string> simd;      // detect_simd_features()
};

struct MemoryInfo {
  uint64_t total_bytes = 0;      // /proc/meminfo MemTotal (sysinfo() as a fallback)
  uint64_t available_bytes = 0;  // /proc/meminfo MemAvailable, 0 when absent
};

struct GpuInfo {
  bool built_with_cuda = false;
  std::string kernel_driver_version;  // NVIDIA kernel module, /proc/driver/nvidia/version
  cuda::LibraryVersions versions;     // all 0 in a CPU-only build
  std::vector<cuda::DeviceInfo> devices;
  std::string error;  // why `devices` is empty, e.g. "no CUDA device: ..."; "" after success
};

struct SystemInfo {
  OsInfo os;
  CpuInfo cpu;
  MemoryInfo memory;
  GpuInfo gpu;
};

SystemInfo collect_system_info();

// SIMD features the CPU has and the OS has enabled, from cpuid and xgetbv, in this fixed
// order: sse4.2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16.
// Empty on other architectures.
std::vector<std::string> detect_simd_features();

// Parsers, separate so tests can feed them text.
std::string parse_cpu_model(std::string_view cpuinfo);  // "" when no "model name" line
// Value of `key` (e.g. "MemTotal") in /proc/meminfo text, in bytes; 0 when absent.
uint64_t parse_meminfo_bytes(std::string_view meminfo, std::string_view key);
// "570.124.06" from /proc/driver/nvidia/version text; "" when absent.
std::string parse_nvidia_driver_version(std::string_view proc_text);

}  // namespace gufo::diagnose
