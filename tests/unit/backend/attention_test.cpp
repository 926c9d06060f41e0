// attend_avx2 and attend_rows_avx2 against the scalar attend() (the reference): random GQA shapes, head sizes with
// and without a tail of 8, f16 and f32 caches, short and long contexts, flat and peaked
// softmaxes. The outputs are convex mixes of V rows, so the bound is relative to max |v|.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "core/dtype.h"

namespace gufo::cpu {
namespace {

struct Case {
  int64_t n_head, n_head_kv, head_dim;
  int32_t position;
  float score_scale;  // multiplies 1/sqrt(head_dim): large values make the softmax peaked
};

TEST(CpuAttention, Avx2MatchesTheScalarReference) {
  if (!attend_avx2_available()) GTEST_SKIP() << "no AVX2 on this CPU";
  const Case cases[] = {{4, 4, 32, 0, 1.0f},      {4, 2, 64, 1, 1.0f},     {8, 2, 128, 33, 1.0f},
                        {12, 4, 20, 7, 1.0f},     {16, 2, 128, 300, 1.0f}, {6, 1, 8, 64, 1.0f},
                        {16, 8, 128, 1023, 1.0f}, {4, 2, 64, 200, 40.0f},  {2, 2, 3, 5, 1.0f}};
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (DType type : {DType::F16, DType::F32}) {
    for (const Case& c : cases) {
      const std::string what = std::string(dtype_name(type)) + " heads " + std::to_string(c.n_head) + "/" +
                               std::to_string(c.n_head_kv) + " dim " + std::to_string(c.head_dim) + " pos " +
                               std::to_string(c.position);
      const int64_t n_embd_kv = c.n_head_kv * c.head_dim;
      const int64_t n_pos = c.position + 1;
      const size_t elem = type == DType::F16 ? 2 : 4;
      std::vector<std::byte> k_bytes(static_cast<size_t>(n_pos * n_embd_kv) * elem);
      std::vector<std::byte> v_bytes(k_bytes.size());
      const KvView kv{.type = type, .k = k_bytes.data(), .v = v_bytes.data(), .n_embd_kv = n_embd_kv};
      float max_abs_v = 0.0f;
      std::vector<float> k_row(static_cast<size_t>(n_embd_kv));
      std::vector<float> v_row(static_cast<size_t>(n_embd_kv));
      for (int32_t p = 0; p < n_pos; ++p) {
        for (float& x : k_row) x = normal(rng);
        for (float& x : v_row) {
          x = normal(rng);
          max_abs_v = std::max(max_abs_v, std::fabs(x));
        }
        kv_store(kv, p, k_row.data(), v_row.data());
      }
      std::vector<float> q(static_cast<size_t>(c.n_head * c.head_dim));
      for (float& x : q) x = normal(rng);
      const AttentionShape shape{.n_head = c.n_head,
                                 .n_head_kv = c.n_head_kv,
                                 .head_dim = c.head_dim,
                                 .scale = c.score_scale / std::sqrt(static_cast<float>(c.head_dim))};
      std::vector<float> scratch(static_cast<size_t>(attention_scratch_floats(shape, c.position)));
      std::vector<float> want(q.size(), NAN);
      std::vector<float> got(q.size(), NAN);
      attend(kv, shape, q.data(), c.position, scratch.data(), want.data());
      // Each KV head separately, as the backend splits a decode step over threads.
      for (int64_t kv_head = 0; kv_head < c.n_head_kv; ++kv_head) {
        attend_avx2(kv, shape, q.data(), c.position, kv_head, kv_head + 1, scratch.data(), got.data());
      }
      double worst = 0.0;
      for (size_t i = 0; i < q.size(); ++i) {
        ASSERT_TRUE(std::isfinite(got[i])) << what << " output " << i;
        worst = std::max(worst, static_cast<double>(std::fabs(got[i] - want[i])));
      }
      EXPECT_LE(worst, 2e-5 * max_abs_v) << what;
    }
  }
}

// attend_rows_avx2 (prefill): many query rows of one sequence at their own positions, rows
// out of order and with gaps, each KV head separately; every row must match attend() for that
// row alone, and equal attend_avx2's result for it bit for bit.
TEST(CpuAttention, BatchedRowsMatchTheScalarReference) {
  if (!attend_avx2_available()) GTEST_SKIP() << "no AVX2 on this CPU";
  const Case cases[] = {{16, 8, 128, 130, 1.0f}, {12, 4, 20, 40, 1.0f}, {4, 2, 64, 70, 40.0f}, {2, 2, 3, 9, 1.0f},
                        {24, 4, 64, 200, 1.0f},  {6, 2, 40, 65, 1.0f},  {8, 1, 80, 90, 1.0f},  {6, 2, 72, 33, 1.0f}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (DType type : {DType::F16, DType::F32}) {
    for (const Case& c : cases) {
      const std::string what = std::string(dtype_name(type)) + " heads " + std::to_string(c.n_head) + "/" +
                               std::to_string(c.n_head_kv) + " dim " + std::to_string(c.head_dim);
      const int64_t n_embd_kv = c.n_head_kv * c.head_dim;
      const int64_t n_pos = c.position + 1;
      const size_t elem = type == DType::F16 ? 2 : 4;
      std::vector<std::byte> k_bytes(static_cast<size_t>(n_pos * n_embd_kv) * elem);
      std::vector<std::byte> v_bytes(k_bytes.size());
      const KvView kv{.type = type, .k = k_bytes.data(), .v = v_bytes.data(), .n_embd_kv = n_embd_kv};
      float max_abs_v = 0.0f;
      std::vector<float> k_row(static_cast<size_t>(n_embd_kv));
      std::vector<float> v_row(static_cast<size_t>(n_embd_kv));
      for (int32_t p = 0; p < n_pos; ++p) {
        for (float& x : k_row) x = normal(rng);
        for (float& x : v_row) {
          x = normal(rng);
          max_abs_v = std::max(max_abs_v, std::fabs(x));
        }
        kv_store(kv, p, k_row.data(), v_row.data());
      }
      const AttentionShape shape{.n_head = c.n_head,
                                 .n_head_kv = c.n_head_kv,
                                 .head_dim = c.head_dim,
                                 .scale = c.score_scale / std::sqrt(static_cast<float>(c.head_dim))};
      const int64_t row_stride = c.n_head * c.head_dim;
      const int64_t n_batch = 11;
      std::vector<float> q(static_cast<size_t>(n_batch * row_stride));
      for (float& x : q) x = normal(rng);
      // Rows 1, 3, 5, ... of the batch, at scattered positions (the last one at c.position).
      std::vector<int64_t> row_index;
      std::vector<int32_t> positions;
      for (int64_t r = 1; r < n_batch; r += 2) {
        row_index.push_back(r);
        positions.push_back(r == n_batch - 2 ? c.position : static_cast<int32_t>(rng() % n_pos));
      }
      std::vector<float> got(q.size(), 0.0f);
      std::vector<float> head_kv;
      std::vector<float> scratch(static_cast<size_t>(attention_rows_scratch_floats(c.position)));
      const AttentionRows rows{.q = q.data(),
                               .out = got.data(),
                               .row_stride = row_stride,
                               .row_index = row_index.data(),
                               .positions = positions.data(),
                               .n_rows = static_cast<int64_t>(row_index.size())};
      for (int64_t kv_head = 0; kv_head < c.n_head_kv; ++kv_head) {
        attend_rows_avx2(kv, shape, rows, kv_head, head_kv, scratch.data());
      }
      std::vector<float> want(static_cast<size_t>(row_stride));
      for (size_t i = 0; i < row_index.size(); ++i) {
        std::vector<float> ref_scratch(static_cast<size_t>(attention_scratch_floats(shape, positions[i])));
        attend(kv, shape, q.data() + row_index[i] * row_stride, positions[i], ref_scratch.data(), want.data());
        double worst = 0.0;
        for (int64_t j = 0; j < row_stride; ++j) {
          const float g = got[static_cast<size_t>(row_index[i] * row_stride + j)];
          ASSERT_TRUE(std::isfinite(g)) << what << " row " << row_index[i];
          worst = std::max(worst, static_cast<double>(std::fabs(g - want[static_cast<size_t>(j)])));
        }
        EXPECT_LE(worst, 2e-5 * max_abs_v) << what << " row " << row_index[i] << " position " << positions[i];
        // And bit for bit what attend_avx2 gives the row alone (a decode step, or a short
        // chunk after a prefix-cache hit): NOTE(attention_avx2).
        std::vector<float> alone(static_cast<size_t>(row_stride), NAN);
        for (int64_t kv_head = 0; kv_head < c.n_head_kv; ++kv_head) {
          attend_avx2(kv, shape, q.data() + row_index[i] * row_stride, positions[i], kv_head, kv_head + 1,
                      ref_scratch.data(), alone.data());
        }
        int mismatches = 0;
        for (int64_t j = 0; j < row_stride; ++j) {
          mismatches += std::memcmp(&alone[static_cast<size_t>(j)],
                                    &got[static_cast<size_t>(row_index[i] * row_stride + j)], sizeof(float)) != 0;
        }
        EXPECT_EQ(mismatches, 0) << what << " row " << row_index[i] << ": batched and alone differ";
      }
      // Rows the call was not given stay untouched.
      for (int64_t j = 0; j < row_stride; ++j) EXPECT_EQ(got[static_cast<size_t>(j)], 0.0f) << what;
    }
  }
}

}  // namespace
}  // namespace gufo::cpu
