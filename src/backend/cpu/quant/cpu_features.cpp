// CPU feature detection (cpuid and the OS's XCR0 mask) and the choice of dot-kernel set.
// Detection runs once, into a function-local const; nothing here is mutable afterwards.
// Tested by tests/unit/backend/cpu_matmul_test.cpp (which runs every set the CPU supports).
#include "backend/cpu/quant/dot_kernels.h"

#include <cstdlib>
#include <string_view>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace gufo::cpu::fast {

#if defined(GUFO_CPU_HAVE_AVX2_KERNELS)
const DotKernels& avx2_dot_kernels_unchecked();  // dot_avx2.cpp
#endif
#if defined(GUFO_CPU_HAVE_AVX512_KERNELS)
const DotKernels& avx512_dot_kernels_unchecked();      // dot_avx512.cpp
const DotKernels& avx512vnni_dot_kernels_unchecked();  // dot_avx512_vnni.cpp
#endif

namespace {

CpuFeatures detect() {
  CpuFeatures features;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return features;
  // NOTE(cpuid): leaf 1 ECX: FMA bit 12, OSXSAVE bit 27, AVX bit 28, F16C bit 29.
  const bool fma = (ecx >> 12) & 1;
  const bool osxsave = (ecx >> 27) & 1;
  const bool avx = (ecx >> 28) & 1;
  const bool f16c = (ecx >> 29) & 1;
  if (!osxsave || !avx) return features;
  // The OS must save the YMM (XCR0 bits 1-2) and, for AVX-512, opmask/ZMM (bits 5-7) state.
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool ymm_saved = (xcr0_lo & 0x6u) == 0x6u;
  const bool zmm_saved = (xcr0_lo & 0xe6u) == 0xe6u;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return features;
  // NOTE(cpuid): leaf 7 EBX: AVX2 bit 5, AVX512F bit 16, AVX512BW bit 30, AVX512VL bit 31;
  // ECX: VNNI bit 11.
  features.avx2 = ymm_saved && fma && f16c && ((ebx >> 5) & 1);
  features.avx512f = features.avx2 && zmm_saved && ((ebx >> 16) & 1);
  features.avx512bw = features.avx512f && ((ebx >> 30) & 1);
  features.avx512vl = features.avx512f && ((ebx >> 31) & 1);
  features.avx512vnni = features.avx512f && ((ecx >> 11) & 1);
#endif
  return features;
}

}  // namespace

const CpuFeatures& detected_cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

const DotKernels* avx2_dot_kernels(const CpuFeatures& features) {
#if defined(GUFO_CPU_HAVE_AVX2_KERNELS)
  if (features.avx2) return &avx2_dot_kernels_unchecked();
#else
  (void)features;
#endif
  return nullptr;
}

const DotKernels* avx512_dot_kernels(const CpuFeatures& features) {
#if defined(GUFO_CPU_HAVE_AVX512_KERNELS)
  if (features.avx2 && features.avx512f && features.avx512bw && features.avx512vl) {
    return &avx512_dot_kernels_unchecked();
  }
#else
  (void)features;
#endif
  return nullptr;
}

const DotKernels* avx512vnni_dot_kernels(const CpuFeatures& features) {
#if defined(GUFO_CPU_HAVE_AVX512_KERNELS)
  if (avx512_dot_kernels(features) != nullptr && features.avx512vnni) return &avx512vnni_dot_kernels_unchecked();
#else
  (void)features;
#endif
  return nullptr;
}

const DotKernels& best_dot_kernels(const CpuFeatures& features) {
  // 0 scalar, 1 avx2, 2 avx512, 3 avx512vnni (and anything else): the most the caller allows.
  static const int cap = [] {
    const char* env = std::getenv("GUFO_CPU_KERNELS");
    const std::string_view name = env != nullptr ? env : "";
    if (name == "scalar") return 0;
    if (name == "avx2") return 1;
    if (name == "avx512") return 2;
    return 3;
  }();
  if (cap >= 3) {
    if (const DotKernels* set = avx512vnni_dot_kernels(features)) return *set;
  }
  if (cap >= 2) {
    if (const DotKernels* set = avx512_dot_kernels(features)) return *set;
  }
  if (cap >= 1) {
    if (const DotKernels* set = avx2_dot_kernels(features)) return *set;
  }
  return scalar_dot_kernels();
}

}  // namespace gufo::cpu::fast
