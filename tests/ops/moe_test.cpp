// MoE routing and combine on CUDA against the CPU (backend/cpu/ops/moe.cpp): the chosen
// experts and their order equal route_token's, weights within a few ulp (expf), the slots
// grouped by expert with tokens ascending, and the combine summing in ascending expert order
// with the CPU's operations (exact); a row's routing alone and in a batch, the same bits.
#include <gtest/gtest.h>

#include <algorithm>

#include "backend/cpu/ops/moe.h"
#include "backend/cuda/ops/ops.h"
#include "tests/ops/ops_harness.h"

namespace gufo::ops_test {
namespace {

TEST(CudaMoe, RoutingMatchesRouteTokenAndGroupsSlotsByExpert) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(21);
  int cases = 0;
  struct Case {
    int64_t rows, n_expert, n_used;
    bool normalize;
  };
  // Qwen3-30B-A3B's 8 of 128 at decode (one row) and prefill, the largest layout (32 of 512);
  // up to 4 rows route and plan in one launch, more in two.
  for (const Case c : {Case{1, 8, 2, true}, Case{13, 8, 2, false}, Case{1, 128, 8, true}, Case{64, 128, 8, true},
                       Case{5, 60, 4, true}, Case{3, 512, 32, false}, Case{4, 128, 8, false}}) {
    std::vector<float> logits = random_floats(static_cast<size_t>(c.rows * c.n_expert), rng, 2.0f);
    logits[3] = logits[4];  // a tie: the lower index must win
    DeviceBuffer<float> dlogits(logits);
    DeviceBuffer<std::byte> memory(cuda::moe_routing_bytes(c.rows, c.n_expert, c.n_used));
    const cuda::MoeRouting r = cuda::moe_routing_at(memory.get(), c.rows, c.n_expert, c.n_used);
    ASSERT_TRUE(cuda::moe_route(dlogits.get(), c.rows, c.n_expert, c.n_used, c.normalize, r, nullptr).ok());
    ASSERT_EQ(gpu::device_synchronize(), gpu::success);
    const auto n_choices = static_cast<size_t>(c.rows * c.n_used);
    std::vector<int32_t> experts(n_choices), offsets(static_cast<size_t>(c.n_expert + 1)), slot_rows(n_choices),
        row_slots(n_choices);
    std::vector<float> weights(n_choices), row_weights(n_choices);
    gpu::copy_to_host(experts.data(), r.choice_expert, n_choices * 4);
    gpu::copy_to_host(weights.data(), r.choice_weight, n_choices * 4);
    gpu::copy_to_host(offsets.data(), r.offsets, offsets.size() * 4);
    gpu::copy_to_host(slot_rows.data(), r.slot_rows, n_choices * 4);
    gpu::copy_to_host(row_slots.data(), r.row_slots, n_choices * 4);
    gpu::copy_to_host(row_weights.data(), r.row_weights, n_choices * 4);
    std::vector<float> probs(static_cast<size_t>(c.n_expert));
    std::vector<cpu::ExpertChoice> want(static_cast<size_t>(c.n_used));
    for (int64_t row = 0; row < c.rows; ++row) {
      cpu::route_token(logits.data() + row * c.n_expert, c.n_expert, c.n_used, c.normalize, probs, want);
      for (int64_t j = 0; j < c.n_used; ++j) {
        EXPECT_EQ(experts[row * c.n_used + j], want[j].expert) << "row " << row << " slot " << j;
        EXPECT_NEAR(weights[row * c.n_used + j], want[j].weight, 1e-6f * std::max(1.0f, want[j].weight));
      }
      // Each token's slots list its experts ascending, and each slot holds this token.
      for (int64_t j = 0; j < c.n_used; ++j) {
        const int32_t slot = row_slots[row * c.n_used + j];
        EXPECT_EQ(slot_rows[slot], row);
        if (j > 0) {
          EXPECT_GT(slot, row_slots[row * c.n_used + j - 1]);
        }
      }
    }
    for (int64_t e = 0; e < c.n_expert; ++e) {
      for (int32_t s = offsets[e]; s + 1 < offsets[e + 1]; ++s) EXPECT_LT(slot_rows[s], slot_rows[s + 1]);
    }
    EXPECT_EQ(offsets.back(), static_cast<int32_t>(n_choices));
    // The experts with slots, ascending, then -1: the matmuls' grid (ExpertRows::active).
    std::vector<int32_t> active(static_cast<size_t>(cuda::moe_grid_experts(c.rows, c.n_expert, c.n_used)));
    gpu::copy_to_host(active.data(), r.active, active.size() * 4);
    std::vector<int32_t> want_active;
    for (int32_t e = 0; e < c.n_expert; ++e) {
      if (offsets[e + 1] > offsets[e]) want_active.push_back(e);
    }
    want_active.resize(active.size(), -1);
    EXPECT_EQ(active, want_active);

    // A row routed alone (one launch for routing and plan) gets the bits it got in the batch.
    {
      const int64_t row = c.rows - 1;
      DeviceBuffer<float> one(
          std::vector<float>(logits.begin() + row * c.n_expert, logits.begin() + (row + 1) * c.n_expert));
      DeviceBuffer<std::byte> one_memory(cuda::moe_routing_bytes(1, c.n_expert, c.n_used));
      const cuda::MoeRouting alone = cuda::moe_routing_at(one_memory.get(), 1, c.n_expert, c.n_used);
      ASSERT_TRUE(cuda::moe_route(one.get(), 1, c.n_expert, c.n_used, c.normalize, alone, nullptr).ok());
      ASSERT_EQ(gpu::device_synchronize(), gpu::success);
      std::vector<int32_t> alone_experts(static_cast<size_t>(c.n_used));
      std::vector<float> alone_weights(static_cast<size_t>(c.n_used));
      gpu::copy_to_host(alone_experts.data(), alone.choice_expert, alone_experts.size() * 4);
      gpu::copy_to_host(alone_weights.data(), alone.choice_weight, alone_weights.size() * 4);
      EXPECT_TRUE(std::equal(alone_experts.begin(), alone_experts.end(), experts.begin() + row * c.n_used));
      EXPECT_TRUE(std::equal(alone_weights.begin(), alone_weights.end(), weights.begin() + row * c.n_used))
          << "the weights differ alone and in a batch of " << c.rows;
    }

    // Combine: the CPU's ascending-expert sum, w * y added to an accumulator from 0 (600
    // columns: several blocks per row).
    const int64_t cols = c.rows % 2 == 1 ? 70 : 600;
    const std::vector<float> y = random_floats(n_choices * cols, rng);
    DeviceBuffer<float> dy(y), out(static_cast<size_t>(c.rows * cols));
    ASSERT_TRUE(cuda::moe_combine(dy.get(), cols, r, c.rows, c.n_used, out.get(), nullptr).ok());
    std::vector<float> want_out(static_cast<size_t>(c.rows * cols), 0.0f);
    for (int64_t row = 0; row < c.rows; ++row) {
      for (int64_t j = 0; j < c.n_used; ++j) {
        const int32_t slot = row_slots[row * c.n_used + j];
        for (int64_t col = 0; col < cols; ++col) {
          want_out[row * cols + col] += row_weights[row * c.n_used + j] * y[slot * cols + col];
        }
      }
    }
    EXPECT_EQ(compare(out.download(), want_out).mismatches, 0u);
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace gufo::ops_test
