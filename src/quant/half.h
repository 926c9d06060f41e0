// fp16 and bf16 <-> fp32 conversions, bit-exact with ggml's portable ones
// (ggml_compute_fp32_to_fp16 / fp16_to_fp32 / fp32_to_bf16 / bf16_to_fp32 in ggml-impl.h).
// Usable from host and device code. Tested by tests/unit/quant/half_test.cpp (known values,
// exhaustive fp16 round trip, digests of ggml's own conversions).
#pragma once

#include <cstdint>
#include <cstring>

#include "quant/host_device.h"

namespace gufo::quant {

GUFO_HOST_DEVICE inline uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

GUFO_HOST_DEVICE inline float float_from_bits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// IEEE binary16 -> binary32. Exact for every finite value and infinity.
// NOTE(half): a NaN keeps its payload but comes back quiet (bit 22 set), as ggml's conversion
// does: it routes the value through an fp32 multiply, which quiets signalling NaNs.
GUFO_HOST_DEVICE inline float fp16_to_fp32(uint16_t half_bits) {
#if defined(__CUDA_ARCH__) && !defined(GUFO_HIP)
  // NOTE(half): on a CUDA device, the hardware conversion (exact for every finite value) where
  // the code below costs a dozen instructions and a branch: the GPU matmuls convert a scale
  // or two per weight row and super-block. Infinities and NaNs still take the code below.
  // tests/ops compares the GPU's dequantized weights and matmuls with the CPU's, bit for bit.
  if ((half_bits & 0x7c00u) != 0x7c00u) {
    float value;
    asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(half_bits));
    return value;
  }
#endif
  const uint32_t sign = static_cast<uint32_t>(half_bits & 0x8000u) << 16;
  const uint32_t exponent = (half_bits >> 10) & 0x1fu;
  const uint32_t mantissa = half_bits & 0x3ffu;
  if (exponent == 0x1f) {  // inf or NaN
    const uint32_t quiet = mantissa != 0 ? 0x00400000u : 0u;
    return float_from_bits(sign | 0x7f800000u | (mantissa << 13) | quiet);
  }
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in fp32
    // NOTE(half): 0x33800000 is 2^-24, the weight of the lowest fp16 subnormal bit.
    const float magnitude = static_cast<float>(mantissa) * float_from_bits(0x33800000u);
    return float_from_bits(sign | float_bits(magnitude));
  }
  // NOTE(half): rebias the exponent from 15 to 127, i.e. add 112 to the exponent field.
  return float_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// IEEE binary32 -> binary16 with round-to-nearest-even; overflow goes to infinity
// (65520 and up), tiny values go to subnormals or signed zero.
// NOTE(half): every NaN becomes sign|0x7E00, dropping its payload, exactly as ggml's portable
// conversion does (hardware F16C would keep the payload; ggml's reference path does not).
GUFO_HOST_DEVICE inline uint16_t fp32_to_fp16(float value) {
  const uint32_t bits = float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);
  // NOTE(half): 0x477FF000 is 65520, halfway between 65504 (largest fp16) and 65536; the tie
  // rounds to the even neighbour, which is the overflow to infinity.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  // NOTE(half): 0x38800000 is 2^-14, the smallest normal fp16.
  if (magnitude >= 0x38800000u) {
    // Round the 23-bit mantissa to 10 bits (add just under half an ulp, plus one when the
    // kept lsb is odd, so ties go to even); a carry ripples into the exponent, as it should.
    const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((rounded - (112u << 23)) >> 13));
  }
  // NOTE(half): below 2^-25 (0x33000000) everything rounds to zero; exactly 2^-25 ties to
  // the even neighbour, zero, in the general path below.
  if (magnitude < 0x33000000u) return sign;
  // Subnormal result: count units of 2^-24. The value is full_mantissa * 2^(exponent - 150),
  // so the unit count is full_mantissa >> (126 - exponent), rounded to nearest even.
  const uint32_t exponent = magnitude >> 23;
  const uint32_t full_mantissa = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24 here
  uint32_t units = full_mantissa >> shift;
  const uint32_t remainder = full_mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (units & 1u) != 0)) ++units;
  return static_cast<uint16_t>(sign | units);  // units == 0x400 is 2^-14, still correct
}

// bfloat16 is the top half of an fp32, so widening is a shift.
GUFO_HOST_DEVICE inline float bf16_to_fp32(uint16_t bf16_bits) {
  return float_from_bits(static_cast<uint32_t>(bf16_bits) << 16);
}

// fp32 -> bfloat16 with round-to-nearest-even (overflow rounds to infinity); a NaN keeps its
// top payload bits and is made quiet, as in ggml_compute_fp32_to_bf16.
GUFO_HOST_DEVICE inline uint16_t fp32_to_bf16(float value) {
  const uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    // NOTE(half): 0x40 in the bf16 is bit 22 of the fp32, the quiet-NaN bit.
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  }
  // NOTE(half): add 0x7FFF plus the lsb that survives, so that exact ties round to even.
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace gufo::quant
