// fp16/bf16 conversion rules: hand-checked values (rounding ties, overflow, subnormals,
// signed zero, NaN) and exhaustive sweeps over all 65536 fp16 patterns.
// Run: ctest --preset unit -R 'Fp16|Bf16'
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "quant/half.h"

namespace gufo::quant {
namespace {

bool fp16_is_nan(uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0; }

TEST(Fp16, KnownValues) {
  EXPECT_EQ(fp32_to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(fp32_to_fp16(-1.0f), 0xbc00);
  EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
  EXPECT_EQ(fp32_to_fp16(2.0f), 0x4000);
  EXPECT_EQ(fp32_to_fp16(0.0f), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);  // largest finite fp16
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);  // below the 65520 midpoint: rounds down
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // the midpoint ties to even, which is inf
  EXPECT_EQ(fp32_to_fp16(-65520.0f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-INFINITY), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(fp32_to_fp16(-std::ldexp(1.0f, -24)), 0x8001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.0f, -24)), 0x03ff);  // largest subnormal
  EXPECT_EQ(fp32_to_fp16(1e-40f), 0x0000);                    // fp32 denormal: far below fp16's range
}

TEST(Fp16, RoundsHalfToEven) {
  // 1 + 2^-11 is halfway between 1 (even mantissa) and 1 + 2^-10: goes to 1.
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  // 1 + 3 * 2^-11 is halfway between 0x3c01 (odd) and 0x3c02: goes to 0x3c02.
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  // A hair above the midpoint rounds up.
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3c01);
  EXPECT_EQ(fp32_to_fp16(2049.0f), 0x6800);  // 2048 and 2050 are neighbours: tie to 2048
  EXPECT_EQ(fp32_to_fp16(2051.0f), 0x6802);  // tie between 2050 (odd) and 2052: 2052
  // Subnormal ties: 2^-25 sits between 0 and 2^-24 (to 0); 3 * 2^-25 between 1 and 2 units.
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);
  // Halfway between the largest subnormal and the smallest normal goes up to the normal.
  EXPECT_EQ(fp32_to_fp16(std::ldexp(2047.0f, -25)), 0x0400);
}

TEST(Fp16, NanStaysNan) {
  EXPECT_EQ(fp32_to_fp16(NAN), 0x7e00);
  EXPECT_EQ(fp32_to_fp16(-NAN), 0xfe00);
  EXPECT_EQ(fp32_to_fp16(float_from_bits(0x7f800001u)), 0x7e00);  // signalling, tiny payload
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7e00)));
  EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7c01)));
  // A signalling fp16 NaN widens to a quiet fp32 NaN with the payload kept.
  EXPECT_EQ(float_bits(fp16_to_fp32(0x7c01)), 0x7fc02000u);
}

TEST(Fp16, WidensExactly) {
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x33d0), 0.244140625f);
  EXPECT_EQ(fp16_to_fp32(0x7c00), INFINITY);
  EXPECT_EQ(fp16_to_fp32(0xfc00), -INFINITY);
  EXPECT_EQ(float_bits(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
}

// Every non-NaN fp16 survives fp16 -> fp32 -> fp16; every NaN stays a NaN.
TEST(Fp16, ExhaustiveRoundTrip) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half_bits = static_cast<uint16_t>(h);
    const uint16_t back = fp32_to_fp16(fp16_to_fp32(half_bits));
    if (fp16_is_nan(half_bits)) {
      ASSERT_TRUE(fp16_is_nan(back)) << std::hex << h;
    } else {
      ASSERT_EQ(back, half_bits) << std::hex << h;
    }
  }
}

// Between each pair of adjacent positive finite fp16 values: the exact midpoint goes to the
// even one, and the fp32 neighbours of the midpoint go to the nearer one.
TEST(Fp16, ExhaustiveMidpointsRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7bff; ++h) {
    const float lo = fp16_to_fp32(static_cast<uint16_t>(h));
    const float hi = fp16_to_fp32(static_cast<uint16_t>(h + 1));
    const float mid = static_cast<float>((static_cast<double>(lo) + hi) / 2);  // exact in fp32
    const uint16_t even = (h % 2 == 0) ? static_cast<uint16_t>(h) : static_cast<uint16_t>(h + 1);
    ASSERT_EQ(fp32_to_fp16(mid), even) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(fp32_to_fp16(std::nextafter(mid, INFINITY)), h + 1) << std::hex << h;
  }
}

TEST(Bf16, KnownValues) {
  EXPECT_EQ(fp32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(fp32_to_bf16(-2.0f), 0xc000);
  EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
  // 1.00390625 = 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(fp32_to_bf16(1.00390625f), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 0x3f81 (odd) and 0x3f82: goes to 0x3f82.
  EXPECT_EQ(fp32_to_bf16(1.01171875f), 0x3f82);
  EXPECT_EQ(fp32_to_bf16(1.00390625f + std::ldexp(1.0f, -20)), 0x3f81);
  EXPECT_EQ(fp32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0x7f7fffffu)), 0x7f80);  // FLT_MAX rounds to inf
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0x00000001u)), 0x0000);  // denormal rounds to 0
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0x00018000u)), 0x0002);  // denormal tie to even
  EXPECT_EQ(bf16_to_fp32(0x3f80), 1.0f);
  EXPECT_EQ(bf16_to_fp32(0x3f81), 1.0078125f);
}

TEST(Bf16, NanIsMadeQuiet) {
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0x7fc00001u)), 0x7fc0);
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0x7f800001u)), 0x7fc0);  // payload only in low bits
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0x7f810000u)), 0x7fc1);  // top payload bits kept
  EXPECT_EQ(fp32_to_bf16(float_from_bits(0xff800001u)), 0xffc0);
  EXPECT_TRUE(std::isnan(bf16_to_fp32(0x7fc1)));
}

TEST(Bf16, ExhaustiveRoundTrip) {
  for (uint32_t b = 0; b < 65536; ++b) {
    const auto bf16_bits = static_cast<uint16_t>(b);
    const bool is_nan = (b & 0x7f80u) == 0x7f80u && (b & 0x7fu) != 0;
    const uint16_t back = fp32_to_bf16(bf16_to_fp32(bf16_bits));
    if (is_nan) {
      ASSERT_EQ(back, bf16_bits | 0x40u) << std::hex << b;
    } else {
      ASSERT_EQ(back, bf16_bits) << std::hex << b;
    }
  }
}

}  // namespace
}  // namespace gufo::quant
