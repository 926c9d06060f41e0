// scale_add: the CUDA kernel against the CPU reference (the oracle), bit for bit, on awkward
// sizes, in place, with guard sentinels around the output; and the launcher's argument checks.
// Run: ctest --preset gpu -R ScaleAdd (skips without a device, except the argument checks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "backend/cpu/ops/scale_add.h"
#include "backend/cuda/compat.cuh"
#include "backend/cuda/ops/scale_add.cuh"
#include "device_buffer.h"

namespace gufo {
namespace {

using gpu_test::DeviceBuffer;

// NOTE(scale_add): exact comparison, no tolerance. Both sides compute fma(a, x, b) with one
// IEEE round-to-nearest (std::fma on the CPU, fmaf on the GPU), nvcc keeps denormals by default
// (no --use_fast_math, so no flush-to-zero), and the CPU build has no -ffast-math. The only
// allowed difference is the NaN payload, which IEEE leaves to the implementation.
bool same_float(float expected, float actual) {
  if (std::isnan(expected)) return std::isnan(actual);
  uint32_t expected_bits = 0, actual_bits = 0;
  std::memcpy(&expected_bits, &expected, sizeof expected_bits);
  std::memcpy(&actual_bits, &actual, sizeof actual_bits);
  return expected_bits == actual_bits;
}

// Random values, with the special ones sprinkled in where fma is easiest to get wrong.
std::vector<float> random_input(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-100.0f, 100.0f);
  std::vector<float> x(n);
  for (float& value : x) value = uniform(rng);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            -1e-40f,
                            std::numeric_limits<float>::max(),
                            1.0f / 3.0f};
  for (size_t special_idx = 0; special_idx < std::size(specials) && special_idx < n; ++special_idx) {
    x[(special_idx * 7919) % n] = specials[special_idx];  // NOTE(test): a prime spreads them
  }
  return x;
}

class ScaleAddGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!gpu_test::have_device(&why)) GTEST_SKIP() << "no CUDA device: " << why;
  }
};

TEST_F(ScaleAddGpu, MatchesCpuReferenceBitForBit) {
  // NOTE(test): 1 and 31/32/33 straddle one warp, 1000 is a partial block, 2^20 + 7 spans many
  // blocks with a ragged tail.
  const int64_t sizes[] = {1, 31, 32, 33, 1000, (int64_t{1} << 20) + 7};
  // NOTE(test): guard elements on both sides of y; the kernel must leave them alone.
  constexpr int64_t guard = 64;
  const float sentinel = -12345.5f;
  uint32_t seed = 1;
  for (const int64_t n : sizes) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<float> x = random_input(static_cast<size_t>(n), seed++);
    std::mt19937 rng(seed++);
    std::uniform_real_distribution<float> coefficient(-4.0f, 4.0f);
    const float a = coefficient(rng);
    const float b = coefficient(rng);

    std::vector<float> expected(x.size());
    ASSERT_TRUE(cpu::scale_add_f32(x, expected, a, b).ok());

    DeviceBuffer<float> x_dev(x.size());
    DeviceBuffer<float> y_dev(x.size() + 2 * guard);
    ASSERT_NE(x_dev.get(), nullptr);
    ASSERT_NE(y_dev.get(), nullptr);
    std::vector<float> y_host(y_dev.size(), sentinel);
    ASSERT_EQ(gpu::copy_to_device(x_dev.get(), x.data(), x.size() * sizeof(float)), gpu::success);
    ASSERT_EQ(gpu::copy_to_device(y_dev.get(), y_host.data(), y_host.size() * sizeof(float)), gpu::success);

    const Status status = cuda::scale_add_f32(x_dev.get(), y_dev.get() + guard, n, a, b);
    ASSERT_TRUE(status.ok()) << status.error().message;
    ASSERT_EQ(gpu::device_synchronize(), gpu::success);
    ASSERT_EQ(gpu::copy_to_host(y_host.data(), y_dev.get(), y_host.size() * sizeof(float)), gpu::success);

    int64_t mismatches = 0;
    for (int64_t idx = 0; idx < n; ++idx) {
      if (!same_float(expected[idx], y_host[guard + idx]) && mismatches++ < 5) {
        ADD_FAILURE() << "y[" << idx << "]: x=" << x[idx] << " cpu=" << expected[idx] << " gpu=" << y_host[guard + idx];
      }
    }
    EXPECT_EQ(mismatches, 0);
    for (int64_t idx = 0; idx < guard; ++idx) {
      EXPECT_EQ(y_host[idx], sentinel) << "guard before y, " << idx;
      EXPECT_EQ(y_host[guard + n + idx], sentinel) << "guard after y, " << idx;
    }
  }
}

TEST_F(ScaleAddGpu, InPlaceMatchesCpuReference) {
  const int64_t n = 4099;
  std::vector<float> x = random_input(n, 99);
  std::vector<float> expected = x;
  ASSERT_TRUE(cpu::scale_add_f32(expected, expected, 0.75f, -2.0f).ok());
  DeviceBuffer<float> xy_dev(x.size());
  ASSERT_NE(xy_dev.get(), nullptr);
  ASSERT_EQ(gpu::copy_to_device(xy_dev.get(), x.data(), x.size() * sizeof(float)), gpu::success);
  const Status status = cuda::scale_add_f32(xy_dev.get(), xy_dev.get(), n, 0.75f, -2.0f);
  ASSERT_TRUE(status.ok()) << status.error().message;
  ASSERT_EQ(gpu::copy_to_host(x.data(), xy_dev.get(), x.size() * sizeof(float)), gpu::success);
  for (int64_t idx = 0; idx < n; ++idx) {
    ASSERT_TRUE(same_float(expected[idx], x[idx])) << idx;
  }
}

TEST_F(ScaleAddGpu, RejectsHostPointers) {
  std::vector<float> host(16);
  DeviceBuffer<float> dev(16);
  ASSERT_NE(dev.get(), nullptr);
  const Status x_host = cuda::scale_add_f32(host.data(), dev.get(), 16, 1.0f, 0.0f);
  ASSERT_FALSE(x_host.ok());
  EXPECT_EQ(x_host.error().message, "scale_add_f32(n=16): x is not device memory (a host pointer?)");
  const Status y_host = cuda::scale_add_f32(dev.get(), host.data(), 16, 1.0f, 0.0f);
  ASSERT_FALSE(y_host.ok());
  EXPECT_EQ(y_host.error().message, "scale_add_f32(n=16): y is not device memory (a host pointer?)");
}

// These checks happen before the launcher touches the device, so they run everywhere.
TEST(ScaleAddArguments, RejectedBeforeAnyLaunch) {
  float buffer[8] = {};
  const Status negative = cuda::scale_add_f32(buffer, buffer, -1, 1.0f, 0.0f);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message, "scale_add_f32(n=-1): n must be >= 0");

  const Status null_x = cuda::scale_add_f32(nullptr, buffer, 8, 1.0f, 0.0f);
  ASSERT_FALSE(null_x.ok());
  EXPECT_EQ(null_x.error().message, "scale_add_f32(n=8): x is null");
  const Status null_y = cuda::scale_add_f32(buffer, nullptr, 8, 1.0f, 0.0f);
  ASSERT_FALSE(null_y.ok());
  EXPECT_EQ(null_y.error().message, "scale_add_f32(n=8): y is null");

  const Status overlap = cuda::scale_add_f32(buffer, buffer + 1, 4, 1.0f, 0.0f);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.error().message, "scale_add_f32(n=4): x and y partly overlap");

  // Nothing to do is not an error, whatever the pointers.
  EXPECT_TRUE(cuda::scale_add_f32(nullptr, nullptr, 0, 1.0f, 0.0f).ok());
}

TEST(ScaleAddCpuReference, RoundsOnce) {
  // fma(3, 1/3f, -1) is the rounding error of 1/3f times 3, not 0: proof of a single rounding.
  const float x[] = {1.0f / 3.0f};
  float y[1] = {};
  ASSERT_TRUE(cpu::scale_add_f32(x, y, 3.0f, -1.0f).ok());
  EXPECT_EQ(y[0], std::fma(3.0f, 1.0f / 3.0f, -1.0f));
  EXPECT_NE(y[0], 0.0f);
}

TEST(ScaleAddCpuReference, RejectsBadArguments) {
  float x[4] = {};
  float y[3] = {};
  const Status mismatch = cpu::scale_add_f32(x, y, 1.0f, 0.0f);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().message, "scale_add_f32: x has 4 elements but y has 3");
  float buffer[8] = {};
  const Status overlap =
      cpu::scale_add_f32(std::span<const float>(buffer, 4), std::span<float>(buffer + 2, 4), 1.0f, 0.0f);
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(overlap.error().message, "scale_add_f32(n=4): x and y partly overlap");
}

}  // namespace
}  // namespace gufo
