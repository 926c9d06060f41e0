// The AVX-512 kernel set with VNNI (vpdpbusd, vpdpwssd): dot_avx512_impl.h with kVnni = true.
// Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (CMakeLists.txt) and used only
// after cpuid says so (cpu_features.cpp). Tested by tests/unit/backend/cpu_matmul_test.cpp.
#include "backend/cpu/quant/dot_avx512_impl.h"

namespace gufo::cpu::fast {

const DotKernels& avx2_dot_kernels_unchecked();  // dot_avx2.cpp

// Called by avx512vnni_dot_kernels() (cpu_features.cpp) once cpuid has confirmed AVX-512
// F/BW/VL and VNNI.
const DotKernels& avx512vnni_dot_kernels_unchecked() {
  static const DotKernels kernels = make_avx512_kernels<true>("avx512vnni", avx2_dot_kernels_unchecked());
  return kernels;
}

}  // namespace gufo::cpu::fast
