// Argument checking and dispatch for quant.h; the arithmetic lives in reference_*.cpp.
// Tested by tests/unit/quant/api_test.cpp.
#include "quant/quant.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "core/check.h"
#include "quant/blocks.h"
#include "quant/reference.h"

namespace gufo::quant {
namespace {

bool is_supported(DType type) {
  switch (type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
      return true;
    default:
      return false;
  }
}

std::string type_name(DType type) {
  const auto info = dtype_info(static_cast<uint32_t>(type));
  if (!info) return "unknown type id " + std::to_string(static_cast<uint32_t>(type));
  return std::string(info->name);
}

// Checks type, length and buffer size; on success stores the bytes the row occupies.
Status check_row(const char* what, DType type, int64_t n_elems, size_t buffer_bytes, uint64_t* row_bytes) {
  const std::string name = type_name(type);
  if (!is_supported(type)) {
    return Error{std::string(what) + ": " + name +
                 " is not supported (supported: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K)"};
  }
  const DTypeInfo info = dtype_info(type);
  if (n_elems < 0 || n_elems % info.block_elems != 0) {
    return Error{std::string(what) + ": " + name + " needs a multiple of " + std::to_string(info.block_elems) +
                 " elements, got " + std::to_string(n_elems)};
  }
  *row_bytes = dtype_row_bytes(info, static_cast<uint64_t>(n_elems));
  if (buffer_bytes < *row_bytes) {
    return Error{std::string(what) + ": " + name + " row of " + std::to_string(n_elems) + " elements needs " +
                 std::to_string(*row_bytes) + " bytes, buffer has " + std::to_string(buffer_bytes)};
  }
  return ok_status();
}

// NOTE(quant): 1e10 bounds what block formats accept before quantizing. Below ~1e11 no
// sub-block scale of the reference searches can become NaN (their largest sums, ~6e4 * |x|^3
// for Q4_K and ~5e2 * |x|^3 for Q6_K, stay finite; products compared against each other may
// reach inf earlier, which only stops the search refining, exactly as in ggml). Above it a
// NaN scale is silently skipped and the block stored as garbage with finite scales. Nothing
// representable is lost: every fp16 block scale overflows long before 1e10 (Q8_0 near 8.3e6,
// K-quants between ~4e6 and ~2.7e8), and those overflows are caught exactly after
// quantizing (check_block_scales).
constexpr float kMaxBlockInput = 1e10f;

Status check_block_input(DType type, const float* src, int64_t n_elems) {
  for (int64_t i = 0; i < n_elems; ++i) {
    if (!std::isfinite(src[i])) {
      return Error{"quantize_row: " + type_name(type) + ": element " + std::to_string(i) + " is " +
                   (std::isnan(src[i]) ? "NaN" : "infinite") + "; only finite values can be quantized"};
    }
    if (std::fabs(src[i]) > kMaxBlockInput) {
      return Error{"quantize_row: " + type_name(type) + ": element " + std::to_string(i) + " is " +
                   std::to_string(src[i]) + ", beyond what an fp16 block scale can reach"};
    }
  }
  return ok_status();
}

// Every supported non-F32 format is made of uint16_t fields (alignof 2); F32 is memcpy'd.
Status check_alignment(const char* what, DType type, const void* data) {
  if (type == DType::F32) return ok_status();
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint16_t) != 0) {
    return Error{std::string(what) + ": " + type_name(type) + " data at an odd address; blocks need " +
                 std::to_string(alignof(uint16_t)) + "-byte alignment"};
  }
  return ok_status();
}

bool fp16_is_finite(uint16_t half_bits) { return (half_bits & 0x7c00u) != 0x7c00u; }

bool scales_finite(const BlockQ8_0& block) { return fp16_is_finite(block.d); }
bool scales_finite(const BlockQ4K& block) { return fp16_is_finite(block.d) && fp16_is_finite(block.dmin); }
bool scales_finite(const BlockQ5K& block) { return fp16_is_finite(block.d) && fp16_is_finite(block.dmin); }
bool scales_finite(const BlockQ6K& block) { return fp16_is_finite(block.d); }

// A block whose fp16 scale overflowed would decode to inf/NaN (ggml writes it anyway):
// report the first such block with its element range and largest magnitude.
template <class Block>
Status check_block_scales(DType type, const Block* blocks, int64_t n_elems, const float* src) {
  const int block_elems = static_cast<int>(dtype_info(type).block_elems);
  for (int64_t block_idx = 0; block_idx < n_elems / block_elems; ++block_idx) {
    if (scales_finite(blocks[block_idx])) continue;
    const int64_t first = block_idx * block_elems;
    float amax = 0;
    for (int i = 0; i < block_elems; ++i) amax = std::fmax(amax, std::fabs(src[first + i]));
    return Error{"quantize_row: " + type_name(type) + ": block " + std::to_string(block_idx) + " (elements " +
                 std::to_string(first) + ".." + std::to_string(first + block_elems - 1) + ", max |x| " +
                 std::to_string(amax) + ") needs a scale beyond the fp16 range"};
  }
  return ok_status();
}

}  // namespace

bool can_dequantize(DType type) { return is_supported(type); }
bool can_quantize(DType type) { return is_supported(type); }

Status dequantize_row(DType type, const void* src, size_t src_bytes, float* dst, int64_t n_elems) {
  uint64_t row_bytes = 0;
  GUFO_RETURN_IF_ERROR(check_row("dequantize_row", type, n_elems, src_bytes, &row_bytes));
  GUFO_CHECK(n_elems == 0 || (src != nullptr && dst != nullptr));
  GUFO_RETURN_IF_ERROR(check_alignment("dequantize_row", type, src));
  switch (type) {
    case DType::F32:
      if (n_elems > 0) std::memcpy(dst, src, row_bytes);
      break;
    case DType::F16:
      dequantize_row_f16(static_cast<const uint16_t*>(src), dst, n_elems);
      break;
    case DType::BF16:
      dequantize_row_bf16(static_cast<const uint16_t*>(src), dst, n_elems);
      break;
    case DType::Q8_0:
      dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n_elems);
      break;
    case DType::Q4_K:
      dequantize_row_q4_k(static_cast<const BlockQ4K*>(src), dst, n_elems);
      break;
    case DType::Q5_K:
      dequantize_row_q5_k(static_cast<const BlockQ5K*>(src), dst, n_elems);
      break;
    case DType::Q6_K:
      dequantize_row_q6_k(static_cast<const BlockQ6K*>(src), dst, n_elems);
      break;
    default:
      GUFO_CHECK(false && "check_row admitted an unsupported type");
  }
  return ok_status();
}

Status quantize_row(DType type, const float* src, int64_t n_elems, void* dst, size_t dst_bytes) {
  uint64_t row_bytes = 0;
  GUFO_RETURN_IF_ERROR(check_row("quantize_row", type, n_elems, dst_bytes, &row_bytes));
  GUFO_CHECK(n_elems == 0 || (src != nullptr && dst != nullptr));
  GUFO_RETURN_IF_ERROR(check_alignment("quantize_row", type, dst));
  switch (type) {
    case DType::F32:
      if (n_elems > 0) std::memcpy(dst, src, row_bytes);
      return ok_status();
    case DType::F16:
      quantize_row_f16(src, static_cast<uint16_t*>(dst), n_elems);
      return ok_status();
    case DType::BF16:
      quantize_row_bf16(src, static_cast<uint16_t*>(dst), n_elems);
      return ok_status();
    default:
      break;
  }

  GUFO_RETURN_IF_ERROR(check_block_input(type, src, n_elems));
  switch (type) {
    case DType::Q8_0: {
      auto* blocks = static_cast<BlockQ8_0*>(dst);
      quantize_row_q8_0(src, blocks, n_elems);
      return check_block_scales(type, blocks, n_elems, src);
    }
    case DType::Q4_K: {
      auto* blocks = static_cast<BlockQ4K*>(dst);
      quantize_row_q4_k(src, blocks, n_elems);
      return check_block_scales(type, blocks, n_elems, src);
    }
    case DType::Q5_K: {
      auto* blocks = static_cast<BlockQ5K*>(dst);
      quantize_row_q5_k(src, blocks, n_elems);
      return check_block_scales(type, blocks, n_elems, src);
    }
    case DType::Q6_K: {
      auto* blocks = static_cast<BlockQ6K*>(dst);
      quantize_row_q6_k(src, blocks, n_elems);
      return check_block_scales(type, blocks, n_elems, src);
    }
    default:
      GUFO_CHECK(false && "check_row admitted an unsupported type");
      return ok_status();
  }
}

}  // namespace gufo::quant
