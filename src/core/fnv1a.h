// FNV-1a, 64 bits (Fowler, Noll, Vo; draft-eastlake-fnv, section 2): the one non-cryptographic
// hash the project uses where a stable value across runs and builds matters (the machine
// fingerprint, synthetic weights' seeds, prefix-cache keys, a model's identity in a session
// file). Streaming: pass the last result as `state` to continue. Tested by tests/unit/core_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace gufo {

inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv1a64Prime = 0x100000001b3ull;

constexpr uint64_t fnv1a_64(std::string_view bytes, uint64_t state = kFnv1a64Offset) {
  for (const char c : bytes) {
    state ^= static_cast<unsigned char>(c);
    state *= kFnv1a64Prime;
  }
  return state;
}

inline uint64_t fnv1a_64(std::span<const std::byte> bytes, uint64_t state = kFnv1a64Offset) {
  for (const std::byte b : bytes) {
    state ^= static_cast<uint8_t>(b);
    state *= kFnv1a64Prime;
  }
  return state;
}

// Continues `state` over the eight bytes of `value`, lowest first.
constexpr uint64_t fnv1a_64_word(uint64_t value, uint64_t state) {
  for (int i = 0; i < 8; ++i) {
    state ^= (value >> (8 * i)) & 0xff;
    state *= kFnv1a64Prime;
  }
  return state;
}

}  // namespace gufo
