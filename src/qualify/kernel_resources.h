// Every GPU kernel's resources as `cuobjdump --dump-resource-usage` lists them (registers,
// stack, shared and local memory per kernel and architecture), and the rules that fail a
// candidate toolchain: a kernel that now spills (local memory or a stack frame where the
// baseline had less), holds fewer warps per SM because of its registers, or has other static
// shared memory; a kernel of the candidate alone that spills.
// Tested by tests/unit/qualify/kernel_resources_test.cpp.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gufo::qualify {

struct KernelResources {
  std::string arch;  // "sm_90a"
  std::string name;  // the mangled name
  int registers = 0;
  int stack = 0;   // bytes a thread
  int shared = 0;  // static shared memory, bytes a block
  int local = 0;   // bytes a thread: spills and local arrays
};

// The kernels of cuobjdump's resource listing, in its order; lines it does not know are skipped.
std::vector<KernelResources> parse_resource_usage(std::string_view listing);

// Warps one SM can hold when registers are the only limit (65,536 registers, allocated 256 at
// a time a warp, at most 64 warps): what an occupancy drop is measured in.
int warps_per_sm_by_registers(int registers);

struct KernelChange {
  KernelResources baseline;
  KernelResources candidate;
  std::vector<std::string> failures;  // empty: a change the rules allow
};

struct ResourceDiff {
  std::vector<KernelChange> changed;  // present in both, some resource differs
  std::vector<KernelResources> only_baseline;
  std::vector<KernelResources> only_candidate;
  std::vector<KernelResources> unmatched_spilling;  // of only_candidate: with local memory or a stack
  size_t unchanged = 0;

  bool failed() const;
};

// A kernel's name with the build-specific hashes of nvcc's anonymous namespaces zeroed: how
// the two builds' kernels are matched.
std::string stable_kernel_name(std::string_view name);

ResourceDiff diff_resources(const std::vector<KernelResources>& baseline,
                            const std::vector<KernelResources>& candidate);

}  // namespace gufo::qualify
