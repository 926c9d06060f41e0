// Checked entry points for converting rows between fp32 and the tensor formats Gufo reads:
// validates type, length and buffer size, then runs the scalar reference (reference.h).
// Tested by tests/unit/quant/api_test.cpp.
//
// Design in brief:
// - blocks.h defines each block layout once (host and device); half.h the fp16/bf16 rules.
// - reference_*.cpp hold the plain-loop oracle; quantizers match ggml's *_ref byte for byte.
// - This layer turns bad arguments into Status errors naming the type and the numbers, and
//   refuses inputs a block format cannot hold (NaN/inf, or a block scale that overflows
//   fp16), where ggml would silently write inf/NaN scales. F16/BF16 are plain IEEE
//   conversions: NaN and inf pass through and values beyond 65504 become inf in F16.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "core/result.h"

namespace gufo::quant {

// True for F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K.
bool can_dequantize(DType type);
// True for F32 (a copy), F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K.
bool can_quantize(DType type);

// Decodes n_elems elements of `type` from src (src_bytes long) into dst[n_elems].
// Errors: unsupported or unknown type, n_elems < 0 or not a multiple of the block size,
// src_bytes smaller than the row needs.
Status dequantize_row(DType type, const void* src, size_t src_bytes, float* dst, int64_t n_elems);

// Encodes src[n_elems] as `type` into dst (dst_bytes long). Errors as above (dst_bytes),
// plus, for block formats, a non-finite input element or a block whose fp16 scale would
// overflow (|x| beyond roughly 65504 * 127 for Q8_0, less for K-quants). On error the
// contents of dst are unspecified.
Status quantize_row(DType type, const float* src, int64_t n_elems, void* dst, size_t dst_bytes);

}  // namespace gufo::quant
