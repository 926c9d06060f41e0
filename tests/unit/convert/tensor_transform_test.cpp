// The llama Q/K permutation against hand-computed rows from llama.cpp's Python formula,
// llama3 rope_freqs against the formula evaluated in double, and element decoding.
// Run: ctest --preset unit -R convert_test
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "convert/tensor_transform.h"
#include "quant/half.h"

namespace gufo::convert {
namespace {

std::vector<uint64_t> permuted_rows(uint64_t n_rows, uint32_t n_head) {
  std::vector<uint64_t> rows;
  for (uint64_t r = 0; r < n_rows; ++r) rows.push_back(llama_permuted_source_row(r, n_rows, n_head));
  return rows;
}

TEST(LlamaPermute, MatchesThePythonFormula) {
  // w.reshape(n_head, 2, head_dim/2, cols).swapaxes(1, 2).reshape(w.shape): with 2 heads of
  // head_dim 4, the rows of head h are [h0, h2, h1, h3] (numpy by hand:
  // reshape(2,2,2) of [0..7] = [[[0,1],[2,3]],[[4,5],[6,7]]], swapaxes(1,2) =
  // [[[0,2],[1,3]],[[4,6],[5,7]]]).
  EXPECT_EQ(permuted_rows(8, 2), (std::vector<uint64_t>{0, 2, 1, 3, 4, 6, 5, 7}));
  // One head of head_dim 8: [0,4,1,5,2,6,3,7] (pairs (i, i+4) become adjacent).
  EXPECT_EQ(permuted_rows(8, 1), (std::vector<uint64_t>{0, 4, 1, 5, 2, 6, 3, 7}));
  // k of a GQA model is permuted with n_head_kv heads: 2 kv heads of head_dim 6.
  EXPECT_EQ(permuted_rows(12, 2), (std::vector<uint64_t>{0, 3, 1, 4, 2, 5, 6, 9, 7, 10, 8, 11}));
}

TEST(LlamaPermute, IsAPermutation) {
  const auto rows = permuted_rows(4096, 32);
  std::vector<bool> seen(rows.size(), false);
  for (uint64_t r : rows) {
    ASSERT_LT(r, rows.size());
    EXPECT_FALSE(seen[r]);
    seen[r] = true;
  }
}

// Why the permutation exists: HF Llama applies rotate_half ("NeoX") RoPE, pairing dims i and
// i + d/2; llama.cpp's llama applies interleaved ("normal") RoPE, pairing 2i and 2i+1. With
// rows permuted, normal_rope(P q) == P neox_rope(q) for every head, position and vector.
TEST(LlamaPermute, TurnsNeoxRopeIntoNormalRope) {
  const uint32_t n_head = 3;
  const uint64_t head_dim = 8;
  const uint64_t n_rows = n_head * head_dim;
  std::vector<double> q(n_rows);
  for (uint64_t r = 0; r < n_rows; ++r) q[r] = std::sin(0.7 * static_cast<double>(r) + 0.1);
  const auto theta = [&](uint64_t pair, int pos) {
    return pos * std::pow(10000.0, -2.0 * static_cast<double>(pair) / static_cast<double>(head_dim));
  };
  const auto neox = [&](std::vector<double> x, int pos) {  // rotate_half, per head
    for (uint64_t h = 0; h < n_head; ++h) {
      for (uint64_t i = 0; i < head_dim / 2; ++i) {
        const uint64_t a = h * head_dim + i;
        const uint64_t b = a + head_dim / 2;
        const double c = std::cos(theta(i, pos));
        const double s = std::sin(theta(i, pos));
        const double xa = x[a];
        const double xb = x[b];
        x[a] = xa * c - xb * s;
        x[b] = xb * c + xa * s;
      }
    }
    return x;
  };
  const auto normal = [&](std::vector<double> x, int pos) {  // interleaved pairs
    for (uint64_t h = 0; h < n_head; ++h) {
      for (uint64_t i = 0; i < head_dim / 2; ++i) {
        const uint64_t a = h * head_dim + 2 * i;
        const double c = std::cos(theta(i, pos));
        const double s = std::sin(theta(i, pos));
        const double xa = x[a];
        const double xb = x[a + 1];
        x[a] = xa * c - xb * s;
        x[a + 1] = xb * c + xa * s;
      }
    }
    return x;
  };
  const auto permute = [&](const std::vector<double>& x) {
    std::vector<double> out(n_rows);
    for (uint64_t r = 0; r < n_rows; ++r) out[r] = x[llama_permuted_source_row(r, n_rows, n_head)];
    return out;
  };
  for (int pos : {0, 1, 5, 37}) {
    const std::vector<double> lhs = normal(permute(q), pos);
    const std::vector<double> rhs = permute(neox(q, pos));
    for (uint64_t r = 0; r < n_rows; ++r) EXPECT_NEAR(lhs[r], rhs[r], 1e-12) << "pos " << pos << " row " << r;
  }
}

// The llama3 factor for pair i, in double (the Python formula without float32 rounding).
double expected_factor(uint32_t i, uint32_t dim, double base, double factor, double low, double high, double old_ctx) {
  const double freq = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);
  const double wavelen = 2 * std::numbers::pi / freq;
  if (wavelen < old_ctx / high) return 1.0;
  if (wavelen > old_ctx / low) return factor;
  const double smooth = (old_ctx / wavelen - low) / (high - low);
  return 1.0 / ((1 - smooth) / factor + smooth);
}

TEST(Llama3RopeFactors, Llama31Config) {
  // Llama 3.1 8B: rope_theta 500000, head_dim 128, factor 8, low 1, high 4, original 8192.
  HfConfig config;
  config.head_dim = 128;
  config.rope_theta = 500000.0;
  config.rope_scaling.type = "llama3";
  config.rope_scaling.factor = 8.0;
  config.rope_scaling.low_freq_factor = 1.0;
  config.rope_scaling.high_freq_factor = 4.0;
  config.rope_scaling.original_max_position_embeddings = 8192;
  const std::vector<float> factors = llama3_rope_factors(config);
  ASSERT_EQ(factors.size(), 64u);
  EXPECT_EQ(factors.front(), 1.0f);  // highest frequency: unscaled
  EXPECT_EQ(factors.back(), 8.0f);   // lowest frequency: scaled by `factor`
  int n_blended = 0;
  for (uint32_t i = 0; i < 64; ++i) {
    const double expected = expected_factor(i, 128, 500000.0, 8.0, 1.0, 4.0, 8192.0);
    // NOTE(test): float32 evaluation (as torch does) vs double: a few ulps of 8.
    EXPECT_NEAR(factors[i], expected, 1e-5 * expected) << "pair " << i;
    if (expected != 1.0 && expected != 8.0) ++n_blended;
    if (i > 0) {
      EXPECT_GE(factors[i], factors[i - 1]);  // monotone from 1 up to factor
    }
  }
  EXPECT_GT(n_blended, 0);  // the smooth band is exercised
}

TEST(Llama3RopeFactors, DefaultsAndSmallHead) {
  HfConfig config;
  config.head_dim = 16;
  config.rope_scaling.type = "llama3";
  config.rope_scaling.factor = 32.0;
  config.rope_scaling.original_max_position_embeddings = 64;
  // rope_theta absent: base 10000, as llama.cpp.
  const std::vector<float> factors = llama3_rope_factors(config);
  ASSERT_EQ(factors.size(), 8u);
  for (uint32_t i = 0; i < 8; ++i) {
    const double expected = expected_factor(i, 16, 10000.0, 32.0, 1.0, 4.0, 64.0);
    EXPECT_NEAR(factors[i], expected, 1e-5 * expected) << "pair " << i;
  }
}

TEST(DecodeElement, FloatTypesAtAnyAddress) {
  std::byte buffer[16] = {};
  const float f = -2.75f;
  std::memcpy(buffer + 1, &f, 4);  // odd address: decoding must not assume alignment
  EXPECT_EQ(decode_element(DType::F32, buffer + 1, 0), -2.75f);
  const uint16_t half = 0x3C00;  // 1.0
  const uint16_t bf16 = 0xC040;  // -3.0
  std::memcpy(buffer + 3, &half, 2);
  std::memcpy(buffer + 5, &bf16, 2);
  EXPECT_EQ(decode_element(DType::F16, buffer + 3, 0), 1.0f);
  EXPECT_EQ(decode_element(DType::BF16, buffer + 3, 1), -3.0f);
}

}  // namespace
}  // namespace gufo::convert
