// The only place where CUDA and HIP differ: the runtime and BLAS names Gufo uses, the warp
// width, and named capability questions. Everything else in backend/cuda says gpu::<name>.
// A HIP build defines GUFO_HIP (not wired into CMake yet). Tested by tests/gpu.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(GUFO_HIP)
#include <hip/hip_runtime.h>
#else
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_runtime.h>
#endif

namespace gufo::gpu {

// --- types and runtime calls ---------------------------------------------------------------
#if defined(GUFO_HIP)
using error_t = hipError_t;
using stream_t = hipStream_t;
using device_prop_t = hipDeviceProp_t;
using pointer_attributes_t = hipPointerAttribute_t;
inline constexpr error_t success = hipSuccess;

inline const char* error_string(error_t code) { return hipGetErrorString(code); }
inline error_t get_last_error() { return hipGetLastError(); }
inline error_t get_device_count(int* count) { return hipGetDeviceCount(count); }
inline error_t get_device(int* device) { return hipGetDevice(device); }
inline error_t get_device_properties(device_prop_t* prop, int device) {
  return hipGetDeviceProperties(prop, device);
}
inline error_t device_get_pci_bus_id(char* buf, int len, int device) {
  return hipDeviceGetPCIBusId(buf, len, device);
}
inline error_t driver_get_version(int* version) { return hipDriverGetVersion(version); }
inline error_t runtime_get_version(int* version) { return hipRuntimeGetVersion(version); }
inline error_t pointer_get_attributes(pointer_attributes_t* attr, const void* ptr) {
  return hipPointerGetAttributes(attr, ptr);
}
inline bool is_device_memory(const pointer_attributes_t& attr) {
  return attr.type == hipMemoryTypeDevice || attr.type == hipMemoryTypeManaged;
}
inline error_t malloc_device(void** ptr, size_t bytes) { return hipMalloc(ptr, bytes); }
inline error_t free_device(void* ptr) { return hipFree(ptr); }
inline error_t copy_to_device(void* dst, const void* src, size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyHostToDevice);
}
inline error_t copy_to_host(void* dst, const void* src, size_t bytes) {
  return hipMemcpy(dst, src, bytes, hipMemcpyDeviceToHost);
}
inline error_t device_synchronize() { return hipDeviceSynchronize(); }
// NOTE(hip): hipBLAS and hipBLASLt only report versions through a handle; diagnose shows 0
// until the HIP build creates one.
inline int blas_version() { return 0; }
inline uint64_t blaslt_version() { return 0; }
#else
using error_t = cudaError_t;
using stream_t = cudaStream_t;
using device_prop_t = cudaDeviceProp;
using pointer_attributes_t = cudaPointerAttributes;
inline constexpr error_t success = cudaSuccess;

inline const char* error_string(error_t code) { return cudaGetErrorString(code); }
inline error_t get_last_error() { return cudaGetLastError(); }
inline error_t get_device_count(int* count) { return cudaGetDeviceCount(count); }
inline error_t get_device(int* device) { return cudaGetDevice(device); }
inline error_t get_device_properties(device_prop_t* prop, int device) {
  return cudaGetDeviceProperties(prop, device);
}
inline error_t device_get_pci_bus_id(char* buf, int len, int device) {
  return cudaDeviceGetPCIBusId(buf, len, device);
}
inline error_t driver_get_version(int* version) { return cudaDriverGetVersion(version); }
inline error_t runtime_get_version(int* version) { return cudaRuntimeGetVersion(version); }
inline error_t pointer_get_attributes(pointer_attributes_t* attr, const void* ptr) {
  return cudaPointerGetAttributes(attr, ptr);
}
inline bool is_device_memory(const pointer_attributes_t& attr) {
  return attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged;
}
inline error_t malloc_device(void** ptr, size_t bytes) { return cudaMalloc(ptr, bytes); }
inline error_t free_device(void* ptr) { return cudaFree(ptr); }
inline error_t copy_to_device(void* dst, const void* src, size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
}
inline error_t copy_to_host(void* dst, const void* src, size_t bytes) {
  return cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
}
inline error_t device_synchronize() { return cudaDeviceSynchronize(); }
// cuBLAS version of the library actually loaded, 10000*major + 100*minor + patch (the
// encoding of CUBLAS_VERSION); 0 when it cannot say.
inline int blas_version() {
  int major = 0, minor = 0, patch = 0;
  if (cublasGetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(MINOR_VERSION, &minor) != CUBLAS_STATUS_SUCCESS ||
      cublasGetProperty(PATCH_LEVEL, &patch) != CUBLAS_STATUS_SUCCESS) {
    return 0;
  }
  return major * 10000 + minor * 100 + patch;
}
// cuBLASLt version of the library actually loaded, same encoding as blas_version().
inline uint64_t blaslt_version() { return cublasLtGetVersion(); }
#endif

// --- warp width ----------------------------------------------------------------------------
#if defined(GUFO_HIP)
#if defined(__AMDGCN_WAVEFRONT_SIZE)
inline constexpr int warp_size = __AMDGCN_WAVEFRONT_SIZE;
#else
// NOTE(hip): CDNA (MI200/MI300) wavefronts are 64 wide; RDNA builds set the macro above to 32.
inline constexpr int warp_size = 64;
#endif
#else
// NOTE(cuda): every NVIDIA architecture so far has 32-thread warps.
inline constexpr int warp_size = 32;
#endif

// --- named capability questions ------------------------------------------------------------
// In device code these answer for the architecture being compiled; host code asks about a
// particular device with the (cc_major, cc_minor) overloads. Kernels never test __CUDA_ARCH__.

// Warp-level tensor-core MMA (mma.sync m16n8k16 with f16/bf16 inputs, f32 accumulate).
__host__ __device__ constexpr bool has_mma() {
#if defined(GUFO_HIP)
  return false;  // NOTE(hip): MFMA paths are not written yet; kernels take the portable path
#elif defined(__CUDA_ARCH__)
  return __CUDA_ARCH__ >= 800;  // NOTE(cuda): m16n8k16 bf16 needs sm_80 (Ampere)
#else
  return false;  // host pass: ask has_mma(cc_major, cc_minor) instead
#endif
}
constexpr bool has_mma(int cc_major, int /*cc_minor*/) { return cc_major >= 8; }

// Warpgroup MMA (wgmma) and TMA: only the arch-specific sm_90a target has them.
__host__ __device__ constexpr bool has_wgmma() {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  return true;
#else
  return false;
#endif
}
constexpr bool has_wgmma(int cc_major, int cc_minor) { return cc_major == 9 && cc_minor == 0; }

}  // namespace gufo::gpu
