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
// Clears a non-sticky error so that it does not surface as the next call's.
inline void clear_last_error() { (void)hipGetLastError(); }
// The device's 16-byte UUID (hipDeviceProp_t has none in ROCm 5.2).
inline error_t device_uuid(unsigned char (&bytes)[16], const device_prop_t& /*prop*/, int device) {
  hipUUID uuid;
  const error_t e = hipDeviceGetUuid(&uuid, device);
  for (int i = 0; i < 16; ++i) bytes[i] = e == hipSuccess ? static_cast<unsigned char>(uuid.bytes[i]) : 0;
  return e;
}
inline error_t get_device_count(int* count) { return hipGetDeviceCount(count); }
inline error_t get_device(int* device) { return hipGetDevice(device); }
inline error_t get_device_properties(device_prop_t* prop, int device) { return hipGetDeviceProperties(prop, device); }
inline error_t device_get_pci_bus_id(char* buf, int len, int device) { return hipDeviceGetPCIBusId(buf, len, device); }
inline error_t driver_get_version(int* version) { return hipDriverGetVersion(version); }
inline error_t runtime_get_version(int* version) { return hipRuntimeGetVersion(version); }
inline error_t pointer_get_attributes(pointer_attributes_t* attr, const void* ptr) {
  return hipPointerGetAttributes(attr, ptr);
}
// NOTE(hip): HIP 5.2 (Debian's) names the field memoryType and flags managed memory apart.
inline bool is_device_memory(const pointer_attributes_t& attr) {
  return attr.memoryType == hipMemoryTypeDevice || attr.isManaged != 0;
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
inline error_t set_device(int device) { return hipSetDevice(device); }
inline error_t mem_get_info(size_t* free_bytes, size_t* total_bytes) { return hipMemGetInfo(free_bytes, total_bytes); }
inline error_t malloc_host(void** ptr, size_t bytes) { return hipHostMalloc(ptr, bytes, hipHostMallocDefault); }
inline error_t free_host(void* ptr) { return hipHostFree(ptr); }
inline error_t stream_create(stream_t* stream) { return hipStreamCreateWithFlags(stream, hipStreamNonBlocking); }
inline error_t stream_destroy(stream_t stream) { return hipStreamDestroy(stream); }
inline error_t stream_synchronize(stream_t stream) { return hipStreamSynchronize(stream); }
inline error_t copy_to_device_async(void* dst, const void* src, size_t bytes, stream_t stream) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, stream);
}
inline error_t copy_to_host_async(void* dst, const void* src, size_t bytes, stream_t stream) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, stream);
}
inline error_t copy_device_async(void* dst, const void* src, size_t bytes, stream_t stream) {
  return hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToDevice, stream);
}
inline error_t memset_async(void* dst, int value, size_t bytes, stream_t stream) {
  return hipMemsetAsync(dst, value, bytes, stream);
}
using event_t = hipEvent_t;
inline error_t event_create(event_t* event) { return hipEventCreate(event); }
inline error_t event_destroy(event_t event) { return hipEventDestroy(event); }
inline error_t event_record(event_t event, stream_t stream) { return hipEventRecord(event, stream); }
inline error_t event_elapsed_ms(float* ms, event_t start, event_t end) { return hipEventElapsedTime(ms, start, end); }
using graph_t = hipGraph_t;
using graph_exec_t = hipGraphExec_t;
inline error_t stream_begin_capture(stream_t stream) {
  return hipStreamBeginCapture(stream, hipStreamCaptureModeThreadLocal);
}
inline error_t stream_end_capture(stream_t stream, graph_t* graph) { return hipStreamEndCapture(stream, graph); }
inline error_t graph_instantiate(graph_exec_t* exec, graph_t graph) {
  return hipGraphInstantiate(exec, graph, nullptr, nullptr, 0);
}
inline error_t graph_launch(graph_exec_t exec, stream_t stream) { return hipGraphLaunch(exec, stream); }
inline error_t graph_destroy(graph_t graph) { return hipGraphDestroy(graph); }
inline error_t graph_exec_destroy(graph_exec_t exec) { return hipGraphExecDestroy(exec); }
inline bool is_out_of_memory(error_t code) { return code == hipErrorOutOfMemory; }
// The most dynamic shared memory one block may ask for on `device`, and the asking.
inline error_t max_shared_per_block_optin(int* bytes, int device) {
  return hipDeviceGetAttribute(bytes, hipDeviceAttributeSharedMemPerBlockOptin, device);
}
inline error_t compute_capability(int* major, int* minor, int device) {
  const error_t e = hipDeviceGetAttribute(major, hipDeviceAttributeComputeCapabilityMajor, device);
  return e != hipSuccess ? e : hipDeviceGetAttribute(minor, hipDeviceAttributeComputeCapabilityMinor, device);
}
template <class Kernel>
inline error_t set_max_dynamic_shared(Kernel* kernel, int bytes) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(kernel), hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
// NOTE(hip): the errors after which the context is unusable (sticky), as HIP names them.
inline bool is_device_lost(error_t code) {
  return code == hipErrorIllegalAddress || code == hipErrorLaunchFailure || code == hipErrorECCNotCorrectable ||
         code == hipErrorNoDevice || code == hipErrorAssert;
}
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
// Clears a non-sticky error so that it does not surface as the next call's.
inline void clear_last_error() { (void)cudaGetLastError(); }
// The device's 16-byte UUID.
inline error_t device_uuid(unsigned char (&bytes)[16], const device_prop_t& prop, int /*device*/) {
  for (int i = 0; i < 16; ++i) bytes[i] = static_cast<unsigned char>(prop.uuid.bytes[i]);
  return cudaSuccess;
}
inline error_t get_device_count(int* count) { return cudaGetDeviceCount(count); }
inline error_t get_device(int* device) { return cudaGetDevice(device); }
inline error_t get_device_properties(device_prop_t* prop, int device) { return cudaGetDeviceProperties(prop, device); }
inline error_t device_get_pci_bus_id(char* buf, int len, int device) { return cudaDeviceGetPCIBusId(buf, len, device); }
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
inline error_t set_device(int device) { return cudaSetDevice(device); }
inline error_t mem_get_info(size_t* free_bytes, size_t* total_bytes) { return cudaMemGetInfo(free_bytes, total_bytes); }
inline error_t malloc_host(void** ptr, size_t bytes) { return cudaMallocHost(ptr, bytes); }
inline error_t free_host(void* ptr) { return cudaFreeHost(ptr); }
inline error_t stream_create(stream_t* stream) { return cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking); }
inline error_t stream_destroy(stream_t stream) { return cudaStreamDestroy(stream); }
inline error_t stream_synchronize(stream_t stream) { return cudaStreamSynchronize(stream); }
inline error_t copy_to_device_async(void* dst, const void* src, size_t bytes, stream_t stream) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
}
inline error_t copy_to_host_async(void* dst, const void* src, size_t bytes, stream_t stream) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream);
}
inline error_t copy_device_async(void* dst, const void* src, size_t bytes, stream_t stream) {
  return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
}
inline error_t memset_async(void* dst, int value, size_t bytes, stream_t stream) {
  return cudaMemsetAsync(dst, value, bytes, stream);
}
using event_t = cudaEvent_t;
inline error_t event_create(event_t* event) { return cudaEventCreate(event); }
inline error_t event_destroy(event_t event) { return cudaEventDestroy(event); }
inline error_t event_record(event_t event, stream_t stream) { return cudaEventRecord(event, stream); }
inline error_t event_elapsed_ms(float* ms, event_t start, event_t end) { return cudaEventElapsedTime(ms, start, end); }
using graph_t = cudaGraph_t;
using graph_exec_t = cudaGraphExec_t;
inline error_t stream_begin_capture(stream_t stream) {
  return cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
}
inline error_t stream_end_capture(stream_t stream, graph_t* graph) { return cudaStreamEndCapture(stream, graph); }
inline error_t graph_instantiate(graph_exec_t* exec, graph_t graph) { return cudaGraphInstantiate(exec, graph, 0); }
inline error_t graph_launch(graph_exec_t exec, stream_t stream) { return cudaGraphLaunch(exec, stream); }
inline error_t graph_destroy(graph_t graph) { return cudaGraphDestroy(graph); }
inline error_t graph_exec_destroy(graph_exec_t exec) { return cudaGraphExecDestroy(exec); }
inline bool is_out_of_memory(error_t code) { return code == cudaErrorMemoryAllocation; }
// The most dynamic shared memory one block may ask for on `device`, and the asking.
inline error_t max_shared_per_block_optin(int* bytes, int device) {
  return cudaDeviceGetAttribute(bytes, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
}
inline error_t compute_capability(int* major, int* minor, int device) {
  const error_t e = cudaDeviceGetAttribute(major, cudaDevAttrComputeCapabilityMajor, device);
  return e != cudaSuccess ? e : cudaDeviceGetAttribute(minor, cudaDevAttrComputeCapabilityMinor, device);
}
template <class Kernel>
inline error_t set_max_dynamic_shared(Kernel* kernel, int bytes) {
  return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
// NOTE(cuda): the "sticky" errors after which the context is unusable and every later call
// fails too (CUDA runtime API docs: cudaErrorIllegalAddress and the rest of this list).
inline bool is_device_lost(error_t code) {
  return code == cudaErrorIllegalAddress || code == cudaErrorLaunchFailure || code == cudaErrorECCUncorrectable ||
         code == cudaErrorHardwareStackError || code == cudaErrorIllegalInstruction ||
         code == cudaErrorMisalignedAddress || code == cudaErrorInvalidAddressSpace || code == cudaErrorInvalidPc ||
         code == cudaErrorAssert || code == cudaErrorDevicesUnavailable || code == cudaErrorNoDevice ||
         code == cudaErrorLaunchTimeout || code == cudaErrorUnknown;
}
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

// --- lane groups -----------------------------------------------------------------------------
// Kernels reduce and broadcast within groups of 32 lanes. On NVIDIA a group is a warp; on
// 64-wide AMD wavefronts two groups share one, and every shuffle passes width 32 so that a
// source lane is counted within its own group.
inline constexpr int group_lanes = 32;
#if defined(__CUDACC__) || defined(__HIPCC__)
#if defined(GUFO_HIP)
__device__ inline float shfl_xor(float value, int mask) { return __shfl_xor(value, mask, group_lanes); }
__device__ inline int shfl_xor(int value, int mask) { return __shfl_xor(value, mask, group_lanes); }
__device__ inline float shfl(float value, int lane) { return __shfl(value, lane, group_lanes); }
__device__ inline int shfl(int value, int lane) { return __shfl(value, lane, group_lanes); }
__device__ inline int shfl_up(int value, int delta) { return __shfl_up(value, delta, group_lanes); }
#else
__device__ inline float shfl_xor(float value, int mask) {
  return __shfl_xor_sync(0xffffffffu, value, mask, group_lanes);
}
__device__ inline int shfl_xor(int value, int mask) { return __shfl_xor_sync(0xffffffffu, value, mask, group_lanes); }
__device__ inline float shfl(float value, int lane) { return __shfl_sync(0xffffffffu, value, lane, group_lanes); }
__device__ inline int shfl(int value, int lane) { return __shfl_sync(0xffffffffu, value, lane, group_lanes); }
__device__ inline int shfl_up(int value, int delta) { return __shfl_up_sync(0xffffffffu, value, delta, group_lanes); }
#endif
// Orders shared-memory writes before reads among the lanes of a group (a warp; on AMD the
// group's wavefront runs in lockstep: a wave barrier between two workgroup fences).
__device__ inline void sync_group() {
#if defined(GUFO_HIP)
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
#else
  __syncwarp();
#endif
}
// Sum and max over the 32 lanes of a group by a fixed butterfly (xor 16, 8, 4, 2, 1), so the
// order of the float additions never depends on anything but the lane: every lane gets the
// same bits.
__device__ inline float group_sum(float value) {
  for (int mask = group_lanes / 2; mask > 0; mask /= 2) value += shfl_xor(value, mask);
  return value;
}
__device__ inline float group_max(float value) {
  for (int mask = group_lanes / 2; mask > 0; mask /= 2) value = fmaxf(value, shfl_xor(value, mask));
  return value;
}
#endif

// --- launches that overlap the kernel before them -----------------------------------------
// A kernel launched by gpu::launch may start (on sm_90: programmatic dependent launch) while
// the kernel before it in the stream still runs: its blocks become resident and run their
// prologue, so a launch and the previous kernel's tail overlap, which is most of the cost of
// a small kernel inside a CUDA graph. In exchange every such kernel must call
// wait_for_inputs() before it reads anything an earlier kernel wrote, and before it writes
// anything (an earlier kernel may still read it); what it may do before is address
// arithmetic and prefetch_l2 of data no kernel writes (weights). After the wait it calls
// start_next_kernel(), so that only the next kernel, never a chain of them, waits resident.
// On HIP and before sm_90 the launch is an ordinary one and both calls do nothing.
#if defined(__CUDACC__) || defined(__HIPCC__)
__device__ inline void wait_for_inputs() {
#if !defined(GUFO_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
__device__ inline void start_next_kernel() {
#if !defined(GUFO_HIP) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}
// A load that skips the SM's L1, whose lines are not kept coherent with other SMs' writes:
// for data another block of the same kernel wrote (and fenced) just before.
__device__ inline float load_past_l1(const float* p) {
#if defined(GUFO_HIP)
  float value;
  __atomic_load(p, &value, __ATOMIC_RELAXED);
  return value;
#else
  return __ldcg(p);
#endif
}
// Brings the 128-byte line at p into L2 without waiting (a hint: no register, no fault).
__device__ inline void prefetch_l2(const void* p) {
#if !defined(GUFO_HIP)
  asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
  (void)p;
#endif
}
#endif

// Whether launches on the current device may overlap (sm_90 and later); asked once per device
// by launch(). Defined in device_info.cpp.
bool current_device_overlaps_launches();

#if defined(__CUDACC__) || defined(__HIPCC__)
template <class... Params, class... Args>
inline error_t launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, stream_t stream,
                      Args&&... args) {
#if defined(GUFO_HIP)
  kernel<<<grid, block, shared_bytes, stream>>>(static_cast<Params>(args)...);
  return hipPeekAtLastError();  // (left for the caller's get_last_error() too, as on CUDA)
#else
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute overlap[1] = {};
  overlap[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  overlap[0].val.programmaticStreamSerializationAllowed = 1;
  if (current_device_overlaps_launches()) {
    config.attrs = overlap;
    config.numAttrs = 1;
  }
  return cudaLaunchKernelEx(&config, kernel, static_cast<Params>(args)...);
#endif
}
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

}  // namespace gufo::gpu
