// Round-trip quality: quantize then dequantize random and adversarial rows and bound the
// error per element and in RMS, per type; check finite output, exact zeros, Q8_0's exact
// idempotence, and that inputs a block format cannot hold are refused rather than stored as
// inf. Run: ctest --preset unit -R RoundTrip
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "quant/blocks.h"
#include "quant/half.h"
#include "quant/quant.h"
#include "test_data.h"

namespace gufo::quant {
namespace {

using test_data::kAllPatterns;
using test_data::make_input;
using test_data::Pattern;
using test_data::pattern_name;

// NOTE(round_trip): 2^-25 is half the spacing of fp16 subnormals: the most a tiny block
// scale can be off after fp16 rounding, in absolute terms.
const double kHalfFp16Subnormal = std::ldexp(1.0, -25);

struct Bounds {
  DType type;
  int group_elems;     // elements sharing one fp16 scale: max |x| is taken over these
  double group_rel;    // per-element |err| <= group_rel * max|x| of the group ...
  double floor_units;  // ... + floor_units * 2^-25 (fp16 subnormal scales), see each NOTE
  double rms_rel;      // RMS(err) / RMS(x) on normal and uniform data
};

// NOTE(round_trip): the bounds, and why.
// Q8_0: err <= d/2 + 127 * |fp16(d) - d| with d = max/127, i.e. max * (1/254 + 2^-11) plus
//   127 * 2^-25 when d is an fp16 subnormal; the bound is that, plus 1e-6 for fp32 rounding.
//   RMS: d / sqrt(12) with max ~ 2.2 sigma over 32 normals: ~0.005 (measured 0.0052).
// Q4_K: 16 levels over a sub-block range of at most 2 * max: rounding error up to max/15;
//   6-bit sub-block scales/mins (1/126 relative) and the weighted least-squares search,
//   which may clip the extreme level, add to it: 0.125 (measured worst 0.112). The floor is
//   (63 * 15 + 63) units: sc * q + m with d and dmin each off by 2^-25. RMS measured 0.070.
// Q5_K: as Q4_K with 32 levels: 0.1 (measured 0.073), floor 63 * 31 + 63 -> 2048 units,
//   RMS measured 0.036.
// Q6_K: 64 symmetric levels, step max/32 so rounding <= max/64 = 0.016, plus 8-bit sub-block
//   scales: 0.03 (measured 0.021); floor |sc * (q - 32)| <= 128 * 32 units; RMS measured 0.017.
// F16/BF16: checked per element against half an ulp instead (see PlainFormatsAreHalfUlp).
constexpr Bounds kBounds[] = {
    {DType::Q8_0, 32, 1.0 / 254 + 1.0 / 2048 + 1e-6, 128, 0.0065},
    {DType::Q4_K, 256, 0.125, 1024, 0.085},
    {DType::Q5_K, 256, 0.10, 2048, 0.045},
    {DType::Q6_K, 256, 0.03, 4096, 0.022},
};

std::vector<float> round_trip(DType type, const std::vector<float>& x) {
  const auto n_elems = static_cast<int64_t>(x.size());
  std::vector<uint8_t> packed(dtype_row_bytes(dtype_info(type), static_cast<uint64_t>(n_elems)));
  const Status quantized = quantize_row(type, x.data(), n_elems, packed.data(), packed.size());
  EXPECT_TRUE(quantized.ok()) << (quantized.ok() ? "" : quantized.error().message);
  std::vector<float> y(x.size());
  EXPECT_TRUE(dequantize_row(type, packed.data(), packed.size(), y.data(), n_elems).ok());
  return y;
}

// Checks every element against the group bound; returns RMS(err) / RMS(x) (0 for x = 0).
double check_group_bound(const Bounds& bounds, const std::vector<float>& x, const std::vector<float>& y,
                         const std::string& what) {
  double sum_err2 = 0;
  double sum_x2 = 0;
  int failures = 0;
  for (size_t group = 0; group < x.size(); group += static_cast<size_t>(bounds.group_elems)) {
    float amax = 0;
    for (int i = 0; i < bounds.group_elems; ++i) amax = std::max(amax, std::fabs(x[group + i]));
    const double limit = bounds.group_rel * amax + bounds.floor_units * kHalfFp16Subnormal;
    for (int i = 0; i < bounds.group_elems; ++i) {
      const size_t idx = group + static_cast<size_t>(i);
      EXPECT_TRUE(std::isfinite(y[idx])) << what << " element " << idx;
      const double err = static_cast<double>(y[idx]) - x[idx];
      if (!(std::fabs(err) <= limit) && failures++ < 3) {
        ADD_FAILURE() << what << " element " << idx << ": x " << x[idx] << " y " << y[idx] << " |err| "
                      << std::fabs(err) << " > " << limit << " (group max " << amax << ")";
      }
      sum_err2 += err * err;
      sum_x2 += static_cast<double>(x[idx]) * x[idx];
    }
  }
  return sum_x2 > 0 ? std::sqrt(sum_err2 / sum_x2) : 0.0;
}

std::string describe(DType type, const char* pattern, uint64_t seed, size_t n) {
  return std::string(dtype_name(type)) + " " + pattern + " seed " + std::to_string(seed) + " n " + std::to_string(n);
}

TEST(RoundTrip, RandomRowsStayWithinBounds) {
  for (const Bounds& bounds : kBounds) {
    // NOTE(round_trip): 1, 2, 3 and 16 blocks: single, multiple and odd block counts.
    for (int n_blocks : {1, 2, 3, 16}) {
      const size_t n = static_cast<size_t>(n_blocks) * dtype_info(bounds.type).block_elems;
      for (uint64_t seed = 1; seed <= 4; ++seed) {
        for (Pattern pattern : {Pattern::kNormal, Pattern::kUniform}) {
          const std::vector<float> x = make_input(pattern, seed, static_cast<int64_t>(n));
          const std::string what = describe(bounds.type, pattern_name(pattern), seed, n);
          const double rms = check_group_bound(bounds, x, round_trip(bounds.type, x), what);
          EXPECT_LT(rms, bounds.rms_rel) << what;
        }
      }
    }
  }
}

TEST(RoundTrip, EveryExtraBitRoughlyHalvesTheError) {
  const std::vector<float> x = make_input(Pattern::kNormal, 7, 4096);
  double rms[3];
  const DType types[3] = {DType::Q4_K, DType::Q5_K, DType::Q6_K};
  for (int i = 0; i < 3; ++i) rms[i] = check_group_bound(kBounds[i + 1], x, round_trip(types[i], x), "normal");
  // NOTE(round_trip): one more bit halves the step; 0.6 leaves room for the scale overheads.
  EXPECT_LT(rms[1], 0.6 * rms[0]);
  EXPECT_LT(rms[2], 0.6 * rms[1]);
}

// All generator patterns (including tiny, denormal, outliers, sparse, constant blocks) and
// hand-made adversarial rows: finite output within the per-element bound, zeros exact.
TEST(RoundTrip, AdversarialRowsStayFiniteAndBounded) {
  std::vector<std::pair<std::string, std::vector<float>>> rows;
  for (Pattern pattern : kAllPatterns) {
    rows.emplace_back(pattern_name(pattern), make_input(pattern, 3, 1024));
  }
  std::vector<float> alternating(1024);
  std::vector<float> mixed_outliers(1024);
  for (size_t i = 0; i < 1024; ++i) {
    alternating[i] = (i % 2 == 0 ? 1.0f : -1.0f) * (i % 64 < 32 ? 1e-3f : 5.0f);
    // NOTE(round_trip): 1e6 is huge next to 1e-2 yet small enough for every fp16 block scale.
    mixed_outliers[i] = (i % 97 == 0) ? (i % 2 == 0 ? 1e6f : -1e6f) : 1e-2f * static_cast<float>(i % 7);
  }
  rows.emplace_back("alternating_signs", alternating);
  rows.emplace_back("1e6_outliers", mixed_outliers);
  rows.emplace_back("constant_negative", std::vector<float>(1024, -3.0f));
  rows.emplace_back("denormal_1e-40", std::vector<float>(1024, 1e-40f));

  for (const Bounds& bounds : kBounds) {
    for (const auto& [name, x] : rows) {
      const std::vector<float> y = round_trip(bounds.type, x);
      check_group_bound(bounds, x, y, std::string(dtype_name(bounds.type)) + " " + name);
      if (name == "zeros") {
        EXPECT_EQ(y, x) << dtype_name(bounds.type) << ": zeros must come back exactly";
      }
    }
  }
}

// F16 and BF16 round to nearest: |err| <= half an ulp of |x| (2^-11 resp. 2^-8 relative),
// or half the smallest subnormal spacing (2^-25 resp. 2^-134).
TEST(RoundTrip, PlainFormatsAreHalfUlp) {
  struct Plain {
    DType type;
    double rel;
    double floor;
  };
  const Plain plains[] = {{DType::F16, std::ldexp(1.0, -11), std::ldexp(1.0, -25)},
                          {DType::BF16, std::ldexp(1.0, -8), std::ldexp(1.0, -134)}};
  for (const Plain& plain : plains) {
    for (Pattern pattern : kAllPatterns) {
      const std::vector<float> x = make_input(pattern, 5, 2048);
      const std::vector<float> y = round_trip(plain.type, x);
      for (size_t i = 0; i < x.size(); ++i) {
        const double limit = plain.rel * std::fabs(x[i]) + plain.floor;
        ASSERT_LE(std::fabs(static_cast<double>(y[i]) - x[i]), limit)
            << dtype_name(plain.type) << " " << pattern_name(pattern) << " element " << i << " x " << x[i];
      }
    }
  }
}

// Requantizing Q8_0 output gives the same bytes: the largest value is 127 * d exactly, so
// the new scale is d again and every value is an exact multiple of it. The one exception is
// a block whose fp16 scale underflowed to 0: its stale quants turn into zeros.
TEST(RoundTrip, Q8_0RequantizationIsExact) {
  for (Pattern pattern : kAllPatterns) {
    const std::vector<float> x = make_input(pattern, 11, 4096);
    std::vector<uint8_t> first(dtype_row_bytes(dtype_info(DType::Q8_0), 4096));
    std::vector<uint8_t> second(first.size());
    std::vector<float> y1(4096);
    std::vector<float> y2(4096);
    ASSERT_TRUE(quantize_row(DType::Q8_0, x.data(), 4096, first.data(), first.size()).ok());
    ASSERT_TRUE(dequantize_row(DType::Q8_0, first.data(), first.size(), y1.data(), 4096).ok());
    ASSERT_TRUE(quantize_row(DType::Q8_0, y1.data(), 4096, second.data(), second.size()).ok());
    ASSERT_TRUE(dequantize_row(DType::Q8_0, second.data(), second.size(), y2.data(), 4096).ok());
    EXPECT_EQ(y2, y1) << pattern_name(pattern);
    for (size_t block = 0; block < first.size() / sizeof(BlockQ8_0); ++block) {
      BlockQ8_0 a;
      BlockQ8_0 b;
      std::memcpy(&a, &first[block * sizeof a], sizeof a);
      std::memcpy(&b, &second[block * sizeof b], sizeof b);
      if (a.d == 0) continue;
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0) << pattern_name(pattern) << " block " << block;
    }
  }
}

// K-quant requantization is not byte-stable in ggml either (the scale search restarts from
// the already-rounded data), but it must not drift beyond one round trip's bound.
TEST(RoundTrip, KQuantRequantizationStaysWithinBounds) {
  for (const Bounds& bounds : kBounds) {
    for (Pattern pattern : {Pattern::kNormal, Pattern::kOutliers, Pattern::kSubBlockScales}) {
      const std::vector<float> y1 = round_trip(bounds.type, make_input(pattern, 13, 2048));
      const std::vector<float> y2 = round_trip(bounds.type, y1);
      check_group_bound(bounds, y1, y2,
                        "requantized " + std::string(dtype_name(bounds.type)) + " " + pattern_name(pattern));
    }
  }
}

// Values no fp16 block scale can hold are refused with an error naming the element or the
// block, where ggml would store an infinite (or silently wrong) block; F16 itself follows
// IEEE and overflows to inf.
TEST(RoundTrip, OutOfRangeInputIsRefusedNotStoredAsInf) {
  std::vector<float> x = make_input(Pattern::kNormal, 17, 512);
  x[300] = 1e30f;
  x[301] = -1e30f;
  for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    std::vector<uint8_t> packed(dtype_row_bytes(dtype_info(type), 512));
    const Status status = quantize_row(type, x.data(), 512, packed.data(), packed.size());
    ASSERT_FALSE(status.ok()) << dtype_name(type);
    EXPECT_NE(status.error().message.find("element 300"), std::string::npos) << status.error().message;
  }
  // 1e9 passes the input check but overflows every fp16 block scale: reported per block.
  x[300] = 1e9f;
  x[301] = -1e9f;
  for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    std::vector<uint8_t> packed(dtype_row_bytes(dtype_info(type), 512));
    const Status status = quantize_row(type, x.data(), 512, packed.data(), packed.size());
    ASSERT_FALSE(status.ok()) << dtype_name(type);
    const std::string block = type == DType::Q8_0 ? "block 9 " : "block 1 ";  // 300 / 32, 300 / 256
    EXPECT_NE(status.error().message.find(block), std::string::npos) << status.error().message;
    EXPECT_NE(status.error().message.find("fp16"), std::string::npos) << status.error().message;
  }
  x[300] = 1e30f;
  const std::vector<float> as_bf16 = round_trip(DType::BF16, x);
  // bf16 keeps the fp32 exponent range: 1e30 comes back within half a bf16 ulp (2^-8).
  EXPECT_NEAR(as_bf16[300], 1e30, 1e30 * std::ldexp(1.0, -8));
  const std::vector<float> as_f16 = round_trip(DType::F16, x);
  EXPECT_EQ(as_f16[300], INFINITY);
  EXPECT_EQ(as_f16[301], -INFINITY);
}

// Sweep outlier magnitudes 1e3..1e10 (sub-blocks scaled independently): every row is either
// refused with an fp16-range error or reconstructed within the type's bound. Nothing in
// between: no silently wrong block with finite scales.
TEST(RoundTrip, HugeMagnitudesEitherFitOrAreRefused) {
  for (const Bounds& bounds : kBounds) {
    int accepted = 0;
    int refused = 0;
    for (int exponent = 3; exponent <= 10; ++exponent) {
      float magnitude = 1;
      for (int i = 0; i < exponent; ++i) magnitude *= 10;
      for (uint64_t seed = 1; seed <= 3; ++seed) {
        test_data::Rng rng(seed * 1000 + static_cast<uint64_t>(exponent));
        std::vector<float> x(1024);
        float scale = 1;
        for (size_t i = 0; i < x.size(); ++i) {
          if (i % 16 == 0) scale = (rng.next() % 4 == 0) ? magnitude * rng.unit() : 1.0f;
          x[i] = rng.normal() * scale;
        }
        std::vector<uint8_t> packed(dtype_row_bytes(dtype_info(bounds.type), x.size()));
        const Status status = quantize_row(bounds.type, x.data(), 1024, packed.data(), packed.size());
        if (!status.ok()) {
          ++refused;
          EXPECT_NE(status.error().message.find("fp16"), std::string::npos) << status.error().message;
          continue;
        }
        ++accepted;
        std::vector<float> y(x.size());
        ASSERT_TRUE(dequantize_row(bounds.type, packed.data(), packed.size(), y.data(), 1024).ok());
        check_group_bound(bounds, x, y,
                          std::string(dtype_name(bounds.type)) + " magnitude 1e" + std::to_string(exponent) + " seed " +
                              std::to_string(seed));
      }
    }
    // Both outcomes must occur, or the sweep is not probing the edge.
    EXPECT_GT(accepted, 0) << dtype_name(bounds.type);
    EXPECT_GT(refused, 0) << dtype_name(bounds.type);
  }
}

}  // namespace
}  // namespace gufo::quant
