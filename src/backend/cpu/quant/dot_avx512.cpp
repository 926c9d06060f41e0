// The AVX-512 (F, BW, VL) kernel set without VNNI: dot_avx512_impl.h with kVnni = false.
// Compiled with -mavx512f -mavx512bw -mavx512vl (CMakeLists.txt) and used only after cpuid
// says so (cpu_features.cpp). Tested by tests/unit/backend/cpu_matmul_test.cpp.
#include "backend/cpu/quant/dot_avx512_impl.h"

namespace gufo::cpu::fast {

const DotKernels& avx2_dot_kernels_unchecked();  // dot_avx2.cpp

// Called by avx512_dot_kernels() (cpu_features.cpp) once cpuid has confirmed AVX-512 F/BW/VL.
const DotKernels& avx512_dot_kernels_unchecked() {
  static const DotKernels kernels = make_avx512_kernels<false>("avx512", avx2_dot_kernels_unchecked());
  return kernels;
}

}  // namespace gufo::cpu::fast
