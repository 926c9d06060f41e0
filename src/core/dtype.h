// Tensor element types, numbered as GGUF numbers them (ggml_type in ggml.h), with the
// block geometry every reader needs to size tensor data. Tested by tests/unit/core_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace gufo {

// NOTE(dtype): the numeric values are the on-disk ids of the GGUF spec ("ggml_type");
// gaps are ids the ecosystem retired (4, 5, 31-33, 36-38) and must stay unknown.
enum class DType : uint32_t {
  F32 = 0,
  F16 = 1,
  Q4_0 = 2,
  Q4_1 = 3,
  Q5_0 = 6,
  Q5_1 = 7,
  Q8_0 = 8,
  Q8_1 = 9,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14,
  Q8_K = 15,
  IQ2_XXS = 16,
  IQ2_XS = 17,
  IQ3_XXS = 18,
  IQ1_S = 19,
  IQ4_NL = 20,
  IQ3_S = 21,
  IQ2_S = 22,
  IQ4_XS = 23,
  I8 = 24,
  I16 = 25,
  I32 = 26,
  I64 = 27,
  F64 = 28,
  IQ1_M = 29,
  BF16 = 30,
  TQ1_0 = 34,
  TQ2_0 = 35,
  MXFP4 = 39,
};

struct DTypeInfo {
  DType type;
  std::string_view name;  // as the GGUF ecosystem prints it, e.g. "Q4_K"
  uint32_t block_elems;   // elements per block (1 for plain types)
  uint32_t block_bytes;   // bytes per block
};

// The info for a GGUF type id, or nullopt when the id is not a known type.
std::optional<DTypeInfo> dtype_info(uint32_t type_id);
DTypeInfo dtype_info(DType type);
std::string_view dtype_name(DType type);
// Case-insensitive name lookup ("q8_0", "F16").
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes needed for a row of n_elems elements; n_elems must be a multiple of block_elems.
inline uint64_t dtype_row_bytes(const DTypeInfo& info, uint64_t n_elems) {
  return n_elems / info.block_elems * info.block_bytes;
}

}  // namespace gufo
