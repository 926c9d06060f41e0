// get_rows, rms_norm, add, swiglu, gather_rows, rope and argmax on CUDA against their CPU
// twins (backend/cpu/ops). get_rows, add, gather_rows and argmax are exact; the others are
// within the tolerance each case states.
#include <gtest/gtest.h>

#include "backend/cpu/ops/ops.h"
#include "backend/cuda/device_weights.h"
#include "backend/cuda/ops/ops.h"
#include "tests/ops/ops_harness.h"

namespace gufo::ops_test {
namespace {

constexpr DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

TEST(CudaRowOps, GetRowsGivesTheCpuDequantizedBits) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(1);
  int cases = 0;
  for (DType type : kAllTypes) {
    for (int64_t cols : {256, 512, 2048}) {
      const HostWeight table = random_weight(type, 37, cols, rng, 1, 1.0f);
      const std::vector<int32_t> ids = {0, 36, 5, 5, 17, 1, 36};
      std::vector<float> want(ids.size() * static_cast<size_t>(cols));
      ASSERT_TRUE(cpu::get_rows(table.weight, ids, want.data()).ok());
      cuda::DeviceWeights weights;
      ASSERT_TRUE(weights.upload_matrix(table.weight, nullptr).ok());
      DeviceBuffer<int32_t> d_ids(ids);
      DeviceBuffer<float> out(want.size());
      ASSERT_TRUE(cuda::get_rows(*weights.matrix(&table.weight), d_ids.get(), static_cast<int64_t>(ids.size()),
                                 out.get(), nullptr)
                      .ok());
      EXPECT_EQ(compare(out.download(), want).mismatches, 0u) << dtype_name(type) << " cols=" << cols;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaRowOps, RmsNormMatchesTheCpu) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(2);
  int cases = 0;
  struct Case {
    int64_t rows, cols, group;
  };
  // Narrow groups take a warp each, from 1024 values a block; 1025 and 100 are not float4 multiples.
  for (const Case c : {Case{1, 64, 64}, Case{7, 4096, 4096}, Case{33, 1024, 128}, Case{5, 96, 32}, Case{1, 100, 100},
                       Case{3, 2050, 1025}, Case{2, 5120, 5120}, Case{4, 2048, 1024}}) {
    const std::vector<float> x = random_floats(static_cast<size_t>(c.rows * c.cols), rng, 3.0f);
    const std::vector<float> w = random_floats(static_cast<size_t>(c.group), rng);
    std::vector<float> want(x.size());
    cpu::rms_norm(x.data(), c.rows, c.cols, w.data(), c.group, 1e-6f, want.data());
    DeviceBuffer<float> dx(x), dw(w), out(x.size());
    ASSERT_TRUE(cuda::rms_norm(dx.get(), c.rows, c.cols, dw.get(), c.group, 1e-6f, out.get(), nullptr).ok());
    // NOTE(row_ops_test): the sum of squares is summed in another order (a butterfly): a few
    // ulp of the result, relative 1e-6 with room.
    const Difference d = compare(out.download(), want);
    EXPECT_LT(d.max_rel, 1e-5) << "rows=" << c.rows << " cols=" << c.cols << " group=" << c.group;
    EXPECT_FALSE(d.nan);
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaRowOps, AddSwigluAndGatherMatchTheCpu) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(3);
  int cases = 0;
  for (int64_t rows : {1, 3, 64}) {
    const int64_t cols = 97;
    const std::vector<float> a = random_floats(static_cast<size_t>(rows * cols), rng);
    const std::vector<float> b = random_floats(static_cast<size_t>(rows * cols), rng);
    const std::vector<float> bias = random_floats(static_cast<size_t>(cols), rng);
    DeviceBuffer<float> da(a), db(b), dbias(bias), out(a.size());
    std::vector<float> want(a.size());
    for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] + b[i];
    ASSERT_TRUE(cuda::add(da.get(), db.get(), rows, cols, rows, out.get(), nullptr).ok());
    EXPECT_EQ(compare(out.download(), want).mismatches, 0u);
    for (size_t i = 0; i < a.size(); ++i) want[i] = a[i] + bias[i % cols];
    ASSERT_TRUE(cuda::add(da.get(), dbias.get(), rows, cols, 1, out.get(), nullptr).ok());
    EXPECT_EQ(compare(out.download(), want).mismatches, 0u);
    cpu::swiglu(a.data(), b.data(), rows * cols, want.data());
    ASSERT_TRUE(cuda::swiglu(da.get(), db.get(), rows * cols, out.get(), nullptr).ok());
    // NOTE(row_ops_test): expf on the GPU is within 2 ulp of the libm one.
    EXPECT_LT(compare(out.download(), want).max_rel, 1e-6);
    const std::vector<int32_t> pick = {static_cast<int32_t>(rows - 1), 0};
    DeviceBuffer<int32_t> dpick(pick);
    DeviceBuffer<float> gathered(2 * cols);
    ASSERT_TRUE(cuda::gather_rows(da.get(), cols, dpick.get(), 2, gathered.get(), nullptr).ok());
    std::vector<float> rows_wanted(a.begin() + (rows - 1) * cols, a.begin() + rows * cols);
    rows_wanted.insert(rows_wanted.end(), a.begin(), a.begin() + cols);
    EXPECT_EQ(compare(gathered.download(), rows_wanted).mismatches, 0u);
    cases += 4;
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaRowOps, RopeMatchesTheCpu) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(4);
  int cases = 0;
  for (model::RopeType type : {model::RopeType::Neox, model::RopeType::Normal}) {
    for (int64_t head_dim : {16, 64, 128}) {
      for (bool factors : {false, true}) {
        const int64_t rows = 9, cols = 4 * head_dim;
        std::vector<float> x = random_floats(static_cast<size_t>(rows * cols), rng);
        const std::vector<int32_t> positions = {0, 1, 2, 17, 255, 1000, 4095, 32767, 131071};
        std::vector<float> ff(static_cast<size_t>(head_dim / 2));
        for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + static_cast<float>(i % 7);
        DeviceBuffer<float> dx(x), dff(ff), dout(x.size());
        DeviceBuffer<int32_t> dpos(positions);
        DeviceBuffer<float> angles(static_cast<size_t>(rows * head_dim));
        ASSERT_TRUE(
            cuda::rope_angles(dpos.get(), rows, head_dim, 1e6f, factors ? dff.get() : nullptr, angles.get(), nullptr)
                .ok());
        ASSERT_TRUE(
            cuda::rope(dx.get(), dout.get(), rows, cols, angles.get(), head_dim, type == model::RopeType::Neox, nullptr)
                .ok());
        cpu::rope(x.data(), rows, cols, positions, head_dim, type, 1e6f, factors ? ff.data() : nullptr);
        // NOTE(row_ops_test): both compute the angle in double and round cos/sin to float; a
        // 1-2 ulp difference in the double cos can flip a float rounding, rarely.
        const Difference d = compare(dout.download(), x);
        EXPECT_LT(d.max_abs, 1e-6 * 8) << "head_dim " << head_dim;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaRowOps, ArgmaxTakesTheLowerIndexOnTies) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(5);
  int cases = 0;
  for (int64_t cols : {1, 31, 512, 151936}) {
    std::vector<float> x = random_floats(static_cast<size_t>(4 * cols), rng);
    // Row 1: a tie between two maxima; row 2: the maximum at the end; row 3: -inf everywhere.
    if (cols > 3) {
      x[cols + 2] = 100.0f;
      x[cols + cols - 1] = 100.0f;
    }
    x[2 * cols + cols - 1] = 50.0f;
    for (int64_t c = 0; c < cols; ++c) x[3 * cols + c] = -INFINITY;
    std::vector<int32_t> want(4);
    for (int64_t r = 0; r < 4; ++r) {
      const float* row = x.data() + r * cols;
      want[r] = static_cast<int32_t>(std::max_element(row, row + cols) - row);
    }
    DeviceBuffer<float> dx(x);
    DeviceBuffer<int32_t> out(4);
    ASSERT_TRUE(cuda::argmax_rows(dx.get(), 4, cols, out.get(), nullptr).ok());
    EXPECT_EQ(out.download(), want) << "cols=" << cols;
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace gufo::ops_test
