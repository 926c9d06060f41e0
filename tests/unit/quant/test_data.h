// Deterministic inputs and digests shared by the quant tests. Inputs use only exact integer
// work and IEEE +,-,* on floats, so every platform and compiler builds identical data (no
// std:: distributions, whose output is implementation-defined, and no libm calls).
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <vector>

namespace gufo::quant::test_data {

// SplitMix64: tiny, well-mixed, fully specified.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // NOTE(test_data): 24 random bits scaled by 2^-24 is exact in fp32: uniform on [0, 1).
  float unit() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }
  float uniform() { return 2.0f * unit() - 1.0f; }  // [-1, 1)
  // NOTE(test_data): Irwin-Hall with 4 terms has variance 4/12; 1.7320508 = sqrt(3) makes it
  // roughly unit normal (tails end at +-3.46), without calling libm.
  float normal() { return (unit() + unit() + unit() + unit() - 2.0f) * 1.7320508f; }

 private:
  uint64_t state_;
};

// Input shapes that steer the quantizers through their different branches.
enum class Pattern {
  kNormal,          // unit normal
  kUniform,         // [-1, 1)
  kSubBlockScales,  // normal times 2^k, k random in [-8, 7] per 16 elements: wide scale range
  kHeavyTail,       // u^5: most values tiny, a few near +-1
  kPositive,        // [0, 1): min clamps to 0
  kNegative,        // (-1, 0]
  kSparse,          // 90% zeros
  kOutliers,        // normal with 1 in 64 values times 1000
  kTiny,            // normal * 1e-6: fp16 scales land in the subnormal range
  kDenormal,        // normal * 1e-40: fp32 denormal inputs, fp16 scales underflow to zero
  kConstantBlocks,  // every 32 elements share one random value
  kZeros,           // all zero
  kHalfSteps,       // multiples of 0.5 in [-8, 8]: exact ties for round/nearest_int
  kLarge,           // normal * 1000
};

inline constexpr Pattern kAllPatterns[] = {
    Pattern::kNormal,         Pattern::kUniform, Pattern::kSubBlockScales, Pattern::kHeavyTail, Pattern::kPositive,
    Pattern::kNegative,       Pattern::kSparse,  Pattern::kOutliers,       Pattern::kTiny,      Pattern::kDenormal,
    Pattern::kConstantBlocks, Pattern::kZeros,   Pattern::kHalfSteps,      Pattern::kLarge,
};

// Names in enum order, for messages.
inline const char* pattern_name(Pattern pattern) {
  static constexpr const char* kNames[] = {
      "normal",   "uniform", "sub_block_scales", "heavy_tail",      "positive", "negative",   "sparse",
      "outliers", "tiny",    "denormal",         "constant_blocks", "zeros",    "half_steps", "large",
  };
  return kNames[static_cast<int>(pattern)];
}

inline std::vector<float> make_input(Pattern pattern, uint64_t seed, int64_t n_elems) {
  Rng rng(seed);
  std::vector<float> x(static_cast<size_t>(n_elems));
  float group_value = 0;
  float group_scale = 1;
  for (int64_t i = 0; i < n_elems; ++i) {
    float& v = x[static_cast<size_t>(i)];
    switch (pattern) {
      case Pattern::kNormal:
        v = rng.normal();
        break;
      case Pattern::kUniform:
        v = rng.uniform();
        break;
      case Pattern::kSubBlockScales:
        if (i % 16 == 0) {
          const int k = static_cast<int>(rng.next() % 16) - 8;
          group_scale = 1;
          for (int j = 0; j < (k < 0 ? -k : k); ++j) {
            group_scale = k < 0 ? group_scale * 0.5f : group_scale * 2.0f;
          }
        }
        v = rng.normal() * group_scale;
        break;
      case Pattern::kHeavyTail: {
        const float u = rng.uniform();
        v = u * u * u * u * u;
        break;
      }
      case Pattern::kPositive:
        v = rng.unit();
        break;
      case Pattern::kNegative:
        v = -rng.unit();
        break;
      case Pattern::kSparse:
        v = (rng.next() % 10 == 0) ? rng.normal() : 0.0f;
        break;
      case Pattern::kOutliers:
        v = rng.normal() * ((rng.next() % 64 == 0) ? 1000.0f : 1.0f);
        break;
      case Pattern::kTiny:
        v = rng.normal() * 1e-6f;
        break;
      case Pattern::kDenormal:
        v = rng.normal() * 1e-40f;
        break;
      case Pattern::kConstantBlocks:
        if (i % 32 == 0) group_value = rng.normal();
        v = group_value;
        break;
      case Pattern::kZeros:
        v = 0.0f;
        break;
      case Pattern::kHalfSteps:
        v = 0.5f * static_cast<float>(static_cast<int>(rng.next() % 33) - 16);
        break;
      case Pattern::kLarge:
        v = rng.normal() * 1000.0f;
        break;
    }
  }
  return x;
}

// FNV-1a, 64 bit, over raw bytes (floats hashed as their little-endian bit patterns).
// Pass a previous result as `hash` to extend a digest over several buffers.
inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ull;
inline uint64_t fnv1a(const void* data, size_t n_bytes, uint64_t hash = kFnv1aOffset) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n_bytes; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// Random block bytes for dequantization tests, with every fp16 field at the given byte
// offsets made finite (exponent 31 becomes 30) so the decoded values stay finite.
inline std::vector<uint8_t> make_random_blocks(uint64_t seed, size_t block_bytes, size_t n_blocks,
                                               std::initializer_list<size_t> fp16_offsets) {
  Rng rng(seed);
  std::vector<uint8_t> bytes(block_bytes * n_blocks);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng.next() >> 56);
  for (size_t block = 0; block < n_blocks; ++block) {
    for (size_t offset : fp16_offsets) {
      uint16_t h;
      std::memcpy(&h, &bytes[block * block_bytes + offset], 2);
      if ((h & 0x7c00u) == 0x7c00u) h = static_cast<uint16_t>(h & 0xfbffu);
      std::memcpy(&bytes[block * block_bytes + offset], &h, 2);
    }
  }
  return bytes;
}

}  // namespace gufo::quant::test_data
