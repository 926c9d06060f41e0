// collect_system_info() and its parsers: /proc text parsing on fixed samples, sane values on
// this machine, and run-time SIMD detection cross-checked against the compiler's own
// __builtin_cpu_supports. Run: ctest --preset unit -R SystemInfo
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "diagnose/system_info.h"

namespace gufo::diagnose {
namespace {

bool has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

TEST(SystemInfo, ParsesCpuModel) {
  const char* text =
      "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n"
      "processor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
  EXPECT_EQ(parse_cpu_model(text), "Intel(R) Xeon(R) Platinum 8480+");
  EXPECT_EQ(parse_cpu_model("processor\t: 0\nBogoMIPS\t: 50.00\n"), "");  // e.g. arm64
  EXPECT_EQ(parse_cpu_model(""), "");
}

TEST(SystemInfo, ParsesMeminfo) {
  const char* text =
      "MemTotal:       16318480 kB\nMemFree:         1234 kB\n"
      "MemAvailable:   12000000 kB\nHugePages_Total:       0\n";
  EXPECT_EQ(parse_meminfo_bytes(text, "MemTotal"), 16318480ull * 1024);
  EXPECT_EQ(parse_meminfo_bytes(text, "MemAvailable"), 12000000ull * 1024);
  EXPECT_EQ(parse_meminfo_bytes(text, "HugePages_Total"), 0u);
  EXPECT_EQ(parse_meminfo_bytes(text, "SwapTotal"), 0u);
  EXPECT_EQ(parse_meminfo_bytes("MemTotal: garbage\n", "MemTotal"), 0u);
}

TEST(SystemInfo, ParsesNvidiaDriverVersion) {
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 "
                                        "20:46:09 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n"),
            "570.124.06");
  EXPECT_EQ(parse_nvidia_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release "
                                        "Build  (dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 07:09:51 UTC 2025\n"),
            "580.65.06");
  EXPECT_EQ(parse_nvidia_driver_version(""), "");
}

TEST(SystemInfo, CollectsSaneValues) {
  const SystemInfo info = collect_system_info();
  EXPECT_FALSE(info.cpu.model.empty());
  EXPECT_FALSE(info.cpu.architecture.empty());
  EXPECT_GE(info.cpu.online_cores, 1);
  EXPECT_GE(info.cpu.configured_cores, info.cpu.online_cores);
  EXPECT_GE(info.cpu.usable_cores, 1);
  EXPECT_LE(info.cpu.usable_cores, info.cpu.configured_cores);
  EXPECT_GE(info.cpu.hardware_concurrency, 1u);
  EXPECT_GT(info.memory.total_bytes, 0u);
  EXPECT_LE(info.memory.available_bytes, info.memory.total_bytes);
  EXPECT_FALSE(info.os.name.empty());
#if defined(GUFO_HAVE_CUDA)
  EXPECT_TRUE(info.gpu.built_with_cuda);
  EXPECT_GT(info.gpu.versions.runtime, 0);  // the runtime answers even without a driver
  EXPECT_GT(info.gpu.versions.cublas, 0);
  // Either devices, or a reason why there are none.
  EXPECT_NE(info.gpu.devices.empty(), info.gpu.error.empty()) << info.gpu.error;
  if (info.gpu.devices.empty()) {
    EXPECT_EQ(info.gpu.error.rfind("no CUDA device: ", 0), 0u);
  }
#else
  EXPECT_FALSE(info.gpu.built_with_cuda);
  EXPECT_TRUE(info.gpu.devices.empty());
  EXPECT_FALSE(info.gpu.error.empty());
#endif
}

TEST(SystemInfo, SimdAgreesWithTheCompilersDetection) {
  const std::vector<std::string> simd = detect_simd_features();
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  // Every feature name that both g++-12 and clang-16 know.
  EXPECT_EQ(has(simd, "sse4.2"), __builtin_cpu_supports("sse4.2") != 0);
  EXPECT_EQ(has(simd, "avx"), __builtin_cpu_supports("avx") != 0);
  EXPECT_EQ(has(simd, "avx2"), __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(has(simd, "fma"), __builtin_cpu_supports("fma") != 0);
  EXPECT_EQ(has(simd, "avx512f"), __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(has(simd, "avx512bw"), __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(has(simd, "avx512vl"), __builtin_cpu_supports("avx512vl") != 0);
  // The order is fixed (the fingerprint hashes the list as text).
  const std::vector<std::string> order = {"sse4.2",  "avx",      "avx2",     "fma",         "f16c",
                                          "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"};
  size_t last = 0;
  for (const std::string& feature : simd) {
    const auto it = std::find(order.begin(), order.end(), feature);
    ASSERT_NE(it, order.end()) << feature;
    const size_t pos = static_cast<size_t>(it - order.begin());
    EXPECT_GE(pos, last) << feature << " out of order";
    last = pos;
  }
#else
  EXPECT_TRUE(simd.empty());
#endif
}

}  // namespace
}  // namespace gufo::diagnose
