// The CUDA device and library query behind `gufo diagnose`: library versions (no device
// needed), and on a GPU machine every device's fields; without one, a clean error.
// Run: ctest --preset gpu -R CudaDeviceInfo
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "backend/cuda/compat.cuh"
#include "backend/cuda/device_info.h"
#include "device_buffer.h"

namespace gufo {
namespace {

TEST(CudaDeviceInfo, FormatsVersions) {
  EXPECT_EQ(cuda::format_cuda_version(13000), "13.0");
  EXPECT_EQ(cuda::format_cuda_version(12080), "12.8");
  EXPECT_EQ(cuda::format_cuda_version(0), "");
  EXPECT_EQ(cuda::format_blas_version(130100), "13.1.0");
  EXPECT_EQ(cuda::format_blas_version(120902), "12.9.2");
  EXPECT_EQ(cuda::format_blas_version(0), "");
}

TEST(CudaDeviceInfo, LibraryVersionsAreThoseBuiltAgainst) {
  const cuda::LibraryVersions versions = cuda::query_library_versions();
  // The runtime and cuBLAS answer without a driver; their majors are the headers' majors.
  EXPECT_EQ(versions.runtime / 1000, CUDART_VERSION / 1000);
  EXPECT_EQ(versions.cublas / 10000, CUBLAS_VER_MAJOR);
  EXPECT_EQ(versions.cublaslt / 10000, static_cast<uint64_t>(CUBLAS_VER_MAJOR));
}

TEST(CudaDeviceInfo, NoDeviceIsACleanError) {
  std::string why;
  if (gpu_test::have_device(&why)) GTEST_SKIP() << "a device is present";
  const Result<std::vector<cuda::DeviceInfo>> devices = cuda::query_devices();
  ASSERT_FALSE(devices.ok());
  EXPECT_EQ(devices.error().message.rfind("no CUDA device: ", 0), 0u) << devices.error().message;
}

TEST(CudaDeviceInfo, ListsEveryDevice) {
  std::string why;
  if (!gpu_test::have_device(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  const Result<std::vector<cuda::DeviceInfo>> devices = cuda::query_devices();
  ASSERT_TRUE(devices.ok()) << devices.error().message;
  int count = 0;
  ASSERT_EQ(gpu::get_device_count(&count), gpu::success);
  ASSERT_EQ(devices->size(), static_cast<size_t>(count));
  for (const cuda::DeviceInfo& device : *devices) {
    SCOPED_TRACE(device.name);
    EXPECT_FALSE(device.name.empty());
    EXPECT_GE(device.cc_major, 1);
    EXPECT_GT(device.total_memory_bytes, 0u);
    EXPECT_GT(device.multiprocessor_count, 0);
    // "dddd:bb:dd.f"
    unsigned domain = 0, bus = 0, slot = 0, function = 0;
    EXPECT_EQ(std::sscanf(device.pci_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus, &slot, &function), 4)
        << device.pci_bus_id;
    // "GPU-" + 8-4-4-4-12 hex digits
    ASSERT_EQ(device.uuid.size(), 40u) << device.uuid;
    EXPECT_EQ(device.uuid.rfind("GPU-", 0), 0u);
  }
  const cuda::LibraryVersions versions = cuda::query_library_versions();
  EXPECT_GE(versions.driver, versions.runtime) << "driver older than the runtime it runs";
}

}  // namespace
}  // namespace gufo
