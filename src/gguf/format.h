// On-disk facts of the GGUF format (ggml docs/gguf.md, "File Structure") and the limits Gufo
// puts on untrusted files. Shared by the reader and the writer so both agree on every number.
// Tested through tests/unit/gguf (reader_test.cpp, writer_test.cpp, bad_corpus_test.cpp).
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string_view>

namespace gufo::gguf {

static_assert(std::endian::native == std::endian::little,
              "the GGUF reader and writer assume a little-endian host (the format is little-endian)");

// NOTE(gguf): the magic is the four bytes 'G' 'G' 'U' 'F' at offset 0 (spec, gguf_header_t).
inline constexpr std::array<char, 4> kMagic = {'G', 'G', 'U', 'F'};

// NOTE(gguf): v2 and v3 share one layout (uint64 counts and string lengths); v3 only added
// the possibility of big-endian files, which we reject. v1 used uint32 counts and lengths
// and the ecosystem dropped it (llama.cpp: "GGUFv1 is no longer supported").
inline constexpr uint32_t kOldestVersion = 2;
inline constexpr uint32_t kNewestVersion = 3;
inline constexpr uint32_t kWriteVersion = 3;

// NOTE(gguf): the spec's default when general.alignment is absent.
inline constexpr uint32_t kDefaultAlignment = 32;
inline constexpr std::string_view kAlignmentKey = "general.alignment";
// NOTE(gguf): llama.cpp refuses alignments above 1 MiB (a huge one turns padding into an
// allocation bomb); real files use 32. We accept any power of two up to the same bound.
inline constexpr uint32_t kMaxAlignment = 1u << 20;

// NOTE(gguf): ggml's GGML_MAX_DIMS; the spec says "currently at most 4".
inline constexpr uint32_t kMaxDims = 4;
// NOTE(gguf): the spec caps keys at 65535 bytes and tensor names at 64 bytes. llama.cpp
// stores names in char[GGML_MAX_NAME = 64] with the NUL, so it refuses names of 64 bytes:
// the reader follows the spec (<= 64), the writer stays within what llama.cpp loads (<= 63).
inline constexpr uint64_t kMaxKeyBytes = 65535;
inline constexpr uint64_t kMaxTensorNameBytes = 64;
inline constexpr uint64_t kMaxWrittenTensorNameBytes = 63;
// NOTE(gguf): arrays of arrays are legal in the spec but no real file nests more than once;
// the cap bounds the reader's recursion (and so its stack) on hostile input.
inline constexpr int kMaxArrayDepth = 16;

// Smallest possible encodings, used to cap counts by the bytes left before allocating.
// NOTE(gguf): a metadata entry is at least key length (8) + 1 key byte + value type (4) +
// a 1-byte value; a tensor info at least name length (8) + 1 name byte + n_dims (4) +
// one dimension (8) + type (4) + offset (8).
inline constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
inline constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
// NOTE(gguf): the header is magic (4) + version (4) + tensor_count (8) + kv_count (8).
inline constexpr uint64_t kHeaderBytes = 24;

// offset rounded up to a multiple of alignment (a power of two); the spec's align_offset().
// The caller guarantees no overflow (offsets here are bounded by a file size).
inline constexpr uint64_t align_up(uint64_t offset, uint64_t alignment) {
  return (offset + alignment - 1) & ~(alignment - 1);
}

inline constexpr bool is_valid_alignment(uint64_t alignment) {
  return alignment != 0 && std::has_single_bit(alignment) && alignment <= kMaxAlignment;
}

}  // namespace gufo::gguf
