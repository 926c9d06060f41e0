// Global -> shared copies that skip the registers (cp.async, sm_80 on), for kernels that stage
// tiles while they compute on the previous ones. CUDA only: HIP builds take the kernels'
// portable paths and never call these.
#pragma once

namespace gufo::cuda {

#if !defined(GUFO_HIP)
// 16 bytes; zero-filled when !valid.
__device__ inline void copy16_async(void* dst, const void* src, bool valid = true) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(address), "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
// 4 bytes (through L1: .cg takes only 16).
__device__ inline void copy4_async(void* dst, const void* src) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(address), "l"(src) : "memory");
}
// Closes the group of copies issued since the last commit.
__device__ inline void copies_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Waits until at most kPending committed groups are still in flight.
template <int kPending>
__device__ inline void copies_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}
#endif

}  // namespace gufo::cuda
