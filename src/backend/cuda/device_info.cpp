// The device and library query behind `gufo diagnose` (see device_info.h). Host C++ only, so
// the host compiler's warnings apply. Tested by tests/gpu/device_info_test.cpp (label gpu).
#include "backend/cuda/device_info.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "backend/cuda/check.cuh"
#include "backend/cuda/compat.cuh"
#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {
namespace {

// The 16 raw UUID bytes in nvidia-smi's 8-4-4-4-12 form.
std::string format_uuid(const unsigned char (&bytes)[16]) {
  std::string out = "GPU-";
  char hex[3];
  for (int byte_idx = 0; byte_idx < 16; ++byte_idx) {
    if (byte_idx == 4 || byte_idx == 6 || byte_idx == 8 || byte_idx == 10) out += '-';
    std::snprintf(hex, sizeof hex, "%02x", bytes[byte_idx]);
    out += hex;
  }
  return out;
}

// The answer of `ask(cc_major, cc_minor)` for the current device, kept per device: asked
// before kernel launches, so not of the driver each time. False where the device is unknown.
template <class Ask>
bool current_device_answer(std::atomic<int8_t> (&known)[64], Ask ask) {
  int device = 0;
  if (gpu::get_device(&device) != gpu::success) {
    gpu::clear_last_error();
    return false;
  }
  const bool cached = device >= 0 && device < 64;
  if (cached && known[device].load() != 0) return known[device].load() == 2;  // 0 unknown, 1 no, 2 yes
  int major = 0, minor = 0;
  if (gpu::compute_capability(&major, &minor, device) != gpu::success) {
    gpu::clear_last_error();
    return false;
  }
  const bool yes = ask(major, minor);
  if (cached) known[device].store(yes ? 2 : 1);
  return yes;
}

}  // namespace

bool current_device_has_mma() {
#if defined(GUFO_HIP)
  return false;
#else
  static std::atomic<int8_t> known[64] = {};
  return current_device_answer(known, [](int major, int minor) { return gpu::has_mma(major, minor); });
#endif
}

int current_device_shared_optin() {
  static std::atomic<int> known[64] = {};  // 0: not asked yet
  int device = 0;
  if (gpu::get_device(&device) != gpu::success) {
    gpu::clear_last_error();
    return 0;
  }
  const bool cached = device >= 0 && device < 64;
  if (cached && known[device].load() != 0) return known[device].load();
  int bytes = 0;
  if (gpu::max_shared_per_block_optin(&bytes, device) != gpu::success) {
    gpu::clear_last_error();
    return 0;
  }
  if (cached) known[device].store(bytes);
  return bytes;
}

LibraryVersions query_library_versions() {
  LibraryVersions versions;
  if (gpu::driver_get_version(&versions.driver) != gpu::success) versions.driver = 0;
  if (gpu::runtime_get_version(&versions.runtime) != gpu::success) versions.runtime = 0;
  versions.cublas = gpu::blas_version();
  versions.cublaslt = gpu::blaslt_version();
  gpu::clear_last_error();  // a failed query must not linger as the next call's error
  return versions;
}

Result<std::vector<DeviceInfo>> query_devices() {
  int count = 0;
  const gpu::error_t code = gpu::get_device_count(&count);
  if (code != gpu::success) {
    gpu::clear_last_error();
    return Error{std::string("no CUDA device: ") + gpu::error_string(code)};
  }
  if (count <= 0) return Error{"no CUDA device: the driver reports 0 devices"};

  std::vector<DeviceInfo> devices;
  for (int device_idx = 0; device_idx < count; ++device_idx) {
    const std::string context = "CUDA device " + std::to_string(device_idx);
    gpu::device_prop_t prop{};
    GUFO_GPU_RETURN_IF_ERROR(gpu::get_device_properties(&prop, device_idx), context);
    // NOTE(cuda): "dddd:bb:dd.f" needs 13 bytes with the terminator; 64 leaves room for any
    // longer domain format a driver may use.
    char bus_id[64] = {};
    GUFO_GPU_RETURN_IF_ERROR(gpu::device_get_pci_bus_id(bus_id, sizeof bus_id, device_idx), context);
    DeviceInfo info;
    info.index = device_idx;
    info.name = prop.name;
    info.cc_major = prop.major;
    info.cc_minor = prop.minor;
    info.total_memory_bytes = prop.totalGlobalMem;
    info.multiprocessor_count = prop.multiProcessorCount;
    info.pci_bus_id = bus_id;
    unsigned char uuid_bytes[16];
    GUFO_GPU_RETURN_IF_ERROR(gpu::device_uuid(uuid_bytes, prop, device_idx), context);
    info.uuid = format_uuid(uuid_bytes);
    devices.push_back(std::move(info));
  }
  return devices;
}

}  // namespace gufo::cuda

namespace gufo::gpu {

bool current_device_overlaps_launches() {
#if defined(GUFO_HIP) || !defined(GUFO_CUDA_MIN_ARCH) || GUFO_CUDA_MIN_ARCH < 90
  return false;  // some kernel may have been built without the wait (CMakeLists.txt)
#else
  // NOTE(launch): programmatic dependent launch came with sm_90 (Hopper). GUFO_CUDA_OVERLAP=0
  // turns it off, to measure what it buys or to rule it out when hunting a race.
  static const bool allowed = [] {
    const char* value = std::getenv("GUFO_CUDA_OVERLAP");
    return value == nullptr || std::string_view(value) != "0";
  }();
  static std::atomic<int8_t> known[64] = {};
  return allowed && cuda::current_device_answer(known, [](int major, int) { return major >= 9; });
#endif
}

}  // namespace gufo::gpu
