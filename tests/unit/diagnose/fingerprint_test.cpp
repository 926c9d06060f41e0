// The machine fingerprint: FNV-1a test vectors, the documented input order, determinism, and
// sensitivity (changing any single input changes the hash; so does a change of toolchain).
// Run: ctest --preset unit -R Fingerprint
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "diagnose/build_info.h"
#include "diagnose/fingerprint.h"
#include "diagnose/system_info.h"

namespace gufo::diagnose {
namespace {

// A machine with two GPUs, so the per-device inputs are covered on any test host.
SystemInfo sample_system() {
  SystemInfo system;
  system.cpu.model = "AMD EPYC 9654 96-Core Processor";
  system.cpu.online_cores = 192;
  system.cpu.simd = {"sse4.2", "avx", "avx2", "fma", "f16c", "avx512f"};
  system.memory.total_bytes = 1536ull << 30;
  system.gpu.built_with_cuda = true;
  system.gpu.kernel_driver_version = "580.65.06";
  system.gpu.versions = {13000, 13000, 130100, 130100};
  for (int device_idx = 0; device_idx < 2; ++device_idx) {
    cuda::DeviceInfo device;
    device.index = device_idx;
    device.name = "NVIDIA H200";
    device.cc_major = 9;
    device.total_memory_bytes = 150754820096ull;
    device.uuid = "GPU-0000000" + std::to_string(device_idx) + "-aaaa-bbbb-cccc-dddddddddddd";
    system.gpu.devices.push_back(device);
  }
  return system;
}

TEST(Fingerprint, Fnv1aTestVectors) {
  // Published FNV-1a 64-bit test vectors (draft-eastlake-fnv, appendix).
  EXPECT_EQ(fnv1a_64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a_64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a_64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(fnv1a_64("bar", fnv1a_64("foo")), fnv1a_64("foobar"));  // streaming
}

TEST(Fingerprint, InputsAreTheDocumentedListInOrder) {
  const std::vector<FingerprintInput> inputs = fingerprint_inputs(build_info(), sample_system());
  std::vector<std::string> names;
  for (const FingerprintInput& input : inputs) names.push_back(input.name);
  // Changing this list changes every fingerprint: update fingerprint.h and the scheme too.
  const std::vector<std::string> expected = {"fingerprint.scheme",
                                             "cpu.model",
                                             "cpu.logical_cores",
                                             "cpu.simd",
                                             "memory.total_gib",
                                             "gpu.count",
                                             "gpu.0.name",
                                             "gpu.0.compute_capability",
                                             "gpu.0.memory_mib",
                                             "gpu.0.uuid",
                                             "gpu.1.name",
                                             "gpu.1.compute_capability",
                                             "gpu.1.memory_mib",
                                             "gpu.1.uuid",
                                             "gpu.driver_version",
                                             "gpu.kernel_driver_version",
                                             "gpu.cublas_runtime_version",
                                             "build.cxx_compiler_id",
                                             "build.cxx_compiler_version",
                                             "build.cxx_compiler_banner",
                                             "build.stdlib",
                                             "build.cuda_toolkit_version",
                                             "build.cublas_header_version",
                                             "build.cuda_architectures",
                                             "build.type"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(inputs[0].value, "gufo-fingerprint-v1");
  EXPECT_EQ(inputs[3].value, "sse4.2,avx,avx2,fma,f16c,avx512f");
  EXPECT_EQ(inputs[4].value, "1536");
  EXPECT_EQ(inputs[7].value, "9.0");
  EXPECT_EQ(inputs[8].value, "143771");  // 150754820096 bytes in whole MiB
  EXPECT_EQ(inputs[14].value, "13.0");
  EXPECT_EQ(inputs[16].value, "13.1.0");
}

TEST(Fingerprint, RoundsMemoryToTheNearestGib) {
  SystemInfo system = sample_system();
  system.memory.total_bytes = (16ull << 30) - (200ull << 20);  // 15.8 GiB reported by the kernel
  EXPECT_EQ(fingerprint_inputs(build_info(), system)[4].value, "16");
  system.memory.total_bytes = (16ull << 30) + (300ull << 20);
  EXPECT_EQ(fingerprint_inputs(build_info(), system)[4].value, "16");
}

TEST(Fingerprint, IsDeterministic) {
  const SystemInfo system = collect_system_info();
  const Fingerprint first = machine_fingerprint(build_info(), system);
  const Fingerprint second = machine_fingerprint(build_info(), collect_system_info());
  EXPECT_EQ(first.hash, second.hash);
  EXPECT_EQ(first.hash.size(), 16u);
  EXPECT_EQ(first.hash.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Fingerprint, EverySingleInputChangesTheHash) {
  const std::vector<FingerprintInput> inputs = fingerprint_inputs(build_info(), sample_system());
  const std::string base = fingerprint_hash(inputs);
  std::set<std::string> seen = {base};
  for (size_t input_idx = 0; input_idx < inputs.size(); ++input_idx) {
    std::vector<FingerprintInput> changed = inputs;
    changed[input_idx].value += "x";
    const std::string hash = fingerprint_hash(changed);
    EXPECT_NE(hash, base) << inputs[input_idx].name;
    EXPECT_TRUE(seen.insert(hash).second) << inputs[input_idx].name << " collides";
  }
}

TEST(Fingerprint, FieldBoundariesMatter) {
  // Netstrings: moving bytes from one value to the next is a different input list.
  const std::string a = fingerprint_hash({{"k", "ab"}, {"l", "c"}});
  const std::string b = fingerprint_hash({{"k", "a"}, {"l", "bc"}});
  EXPECT_NE(a, b);
  EXPECT_NE(fingerprint_hash({{"k", "v"}}), fingerprint_hash({{"kv", ""}}));
}

TEST(Fingerprint, AnotherToolchainIsAnotherFingerprint) {
  const SystemInfo system = sample_system();
  BuildInfo gcc = build_info();
  gcc.cxx_compiler_id = "GNU";
  gcc.cxx_compiler_version = "12.2.0";
  gcc.cxx_compiler_banner = "g++-12 (Debian 12.2.0-14+deb12u1) 12.2.0";
  BuildInfo clang = gcc;
  clang.cxx_compiler_id = "Clang";
  clang.cxx_compiler_version = "16.0.6";
  clang.cxx_compiler_banner = "Debian clang version 16.0.6 (15~deb12u1)";
  EXPECT_NE(machine_fingerprint(gcc, system).hash, machine_fingerprint(clang, system).hash);
  BuildInfo newer_cublas = gcc;
  newer_cublas.cublas_header_version = "13.2.0";
  EXPECT_NE(machine_fingerprint(gcc, system).hash, machine_fingerprint(newer_cublas, system).hash);
}

TEST(Fingerprint, GpuOrderAndDriverMatter) {
  SystemInfo system = sample_system();
  const std::string base = machine_fingerprint(build_info(), system).hash;
  system.gpu.devices.pop_back();
  EXPECT_NE(machine_fingerprint(build_info(), system).hash, base);
  system = sample_system();
  system.gpu.kernel_driver_version = "580.82.07";
  EXPECT_NE(machine_fingerprint(build_info(), system).hash, base);
}

}  // namespace
}  // namespace gufo::diagnose
