// cuobjdump's resource listing and the rules of stage 1 (src/qualify/kernel_resources.h).
#include <gtest/gtest.h>

#include "qualify/kernel_resources.h"

namespace gufo::qualify {
namespace {

// The shape of `cuobjdump --dump-resource-usage` (CUDA 12-13), two architectures.
constexpr const char* kListing = R"(
Fatbin elf code:
================
arch = sm_90a
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Common:
  GLOBAL:0
 Function _Z10mat_vec_qILi4EEvPKv:
  REG:40 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:568 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z9attentionv:
  REG:128 STACK:16 SHARED:49152 LOCAL:8 CONSTANT[0]:600 TEXTURE:0 SURFACE:0 SAMPLER:0

Fatbin elf code:
================
arch = sm_80
code version = [1,8]
host = linux
compile_size = 64bit

Resource usage:
 Function _Z10mat_vec_qILi4EEvPKv:
  REG:38 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:568 TEXTURE:0 SURFACE:0 SAMPLER:0
)";

KernelResources kernel(std::string name, int registers, int stack = 0, int shared = 0, int local = 0) {
  return {"sm_90a", std::move(name), registers, stack, shared, local};
}

TEST(QualifyKernelResources, ParsesEveryKernelOfEveryArchitecture) {
  const std::vector<KernelResources> k = parse_resource_usage(kListing);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[0].arch, "sm_90a");
  EXPECT_EQ(k[0].name, "_Z10mat_vec_qILi4EEvPKv");
  EXPECT_EQ(k[0].registers, 40);
  EXPECT_EQ(k[1].stack, 16);
  EXPECT_EQ(k[1].shared, 49152);
  EXPECT_EQ(k[1].local, 8);
  EXPECT_EQ(k[2].arch, "sm_80");
  EXPECT_EQ(k[2].registers, 38);
  EXPECT_TRUE(parse_resource_usage("no kernels here\n").empty());
}

TEST(QualifyKernelResources, WarpsPerSmFollowRegisterAllocation) {
  EXPECT_EQ(warps_per_sm_by_registers(32), 64);  // 1,024 registers a warp: the 64-warp cap
  EXPECT_EQ(warps_per_sm_by_registers(40), 51);  // 1,280 a warp
  EXPECT_EQ(warps_per_sm_by_registers(41), 42);  // rounds up to 1,536 a warp
  EXPECT_EQ(warps_per_sm_by_registers(128), 16);
  EXPECT_EQ(warps_per_sm_by_registers(255), 8);
}

TEST(QualifyKernelResources, UnchangedKernelsPass) {
  const ResourceDiff d = diff_resources({kernel("a", 40), kernel("b", 64)}, {kernel("b", 64), kernel("a", 40)});
  EXPECT_EQ(d.unchanged, 2u);
  EXPECT_TRUE(d.changed.empty());
  EXPECT_FALSE(d.failed());
}

TEST(QualifyKernelResources, ANewSpillFails) {
  const ResourceDiff d = diff_resources({kernel("a", 255)}, {kernel("a", 255, 0, 0, 24)});
  ASSERT_EQ(d.changed.size(), 1u);
  EXPECT_TRUE(d.failed());
  EXPECT_NE(d.changed[0].failures[0].find("local memory 0 -> 24"), std::string::npos);
  EXPECT_TRUE(diff_resources({kernel("a", 64)}, {kernel("a", 64, 32)}).failed());  // a stack frame
}

TEST(QualifyKernelResources, AnOccupancyDropFailsAndARegisterWithinTheStepDoesNot) {
  const ResourceDiff drop = diff_resources({kernel("a", 40)}, {kernel("a", 41)});
  EXPECT_TRUE(drop.failed());
  EXPECT_NE(drop.changed[0].failures[0].find("occupancy 51 -> 42"), std::string::npos);
  const ResourceDiff same_step = diff_resources({kernel("a", 33)}, {kernel("a", 40)});
  ASSERT_EQ(same_step.changed.size(), 1u);
  EXPECT_FALSE(same_step.failed());
  EXPECT_FALSE(diff_resources({kernel("a", 64, 0, 0, 16)}, {kernel("a", 56)}).failed());  // fewer is better
}

TEST(QualifyKernelResources, KernelsOfOneSideAreListedAndMustNotSpill) {
  const ResourceDiff d = diff_resources({kernel("gone", 32)}, {kernel("new", 32)});
  ASSERT_EQ(d.only_baseline.size(), 1u);
  ASSERT_EQ(d.only_candidate.size(), 1u);
  EXPECT_EQ(d.only_baseline[0].name, "gone");
  EXPECT_FALSE(d.failed());
  const ResourceDiff spilling = diff_resources({kernel("gone", 32)}, {kernel("new", 255, 0, 0, 40)});
  ASSERT_EQ(spilling.unmatched_spilling.size(), 1u);
  EXPECT_TRUE(spilling.failed());
}

TEST(QualifyKernelResources, OtherStaticSharedMemoryFails) {
  const ResourceDiff d = diff_resources({kernel("a", 64, 0, 16384)}, {kernel("a", 64, 0, 20480)});
  EXPECT_TRUE(d.failed());
  EXPECT_NE(d.changed[0].failures[0].find("static shared memory 16384 -> 20480"), std::string::npos);
}

TEST(QualifyKernelResources, AnonymousNamespaceHashesDoNotKeepTwinsApart) {
  // nvcc 13's name for `namespace { __global__ void kern(float*) }` in anon.cu; the hex digits
  // may differ between two builds of one file.
  const std::string a = "_ZN39_GLOBAL__N__28af0092_7_anon_cu_d589cb604kernEPf";
  const std::string b = "_ZN39_GLOBAL__N__91c2d3e4_7_anon_cu_0badf00d4kernEPf";
  EXPECT_EQ(stable_kernel_name(a), "_ZN39_GLOBAL__N__00000000_7_anon_cu_000000004kernEPf");
  EXPECT_EQ(stable_kernel_name(a), stable_kernel_name(b));
  EXPECT_EQ(stable_kernel_name("_Z9attentionv"), "_Z9attentionv");
  const ResourceDiff d = diff_resources({kernel(a, 40)}, {kernel(b, 40, 0, 0, 8)});
  ASSERT_EQ(d.changed.size(), 1u);  // matched as twins, so the spill is found as a change
  EXPECT_TRUE(d.failed());
}

}  // namespace
}  // namespace gufo::qualify
