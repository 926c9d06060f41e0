// Scalar reference (de)quantizers: plain loops, the oracle every SIMD and GPU path is tested
// against. Quantizers reproduce ggml's *_ref functions (what llama.cpp's `quantize` runs when
// no imatrix is given) byte for byte. Tested by tests/unit/quant (ggml digests, known answers).
//
// These take trusted arguments: n_elems must be a multiple of the type's block size (checked
// with GUFO_CHECK) and buffers must be large enough. Use quant.h for checked entry points.
// Ports (SIMD, CUDA) must reproduce dequantized floats bit for bit: keep each multiply and
// subtract separately rounded, in the order written here (nvcc fuses to FMA by default:
// use __fmul_rn/__fsub_rn or -fmad=false there).
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace gufo::quant {

// y[i] = x[i] (fp16/bf16 widened exactly).
void dequantize_row_f16(const uint16_t* src, float* dst, int64_t n_elems);
void dequantize_row_bf16(const uint16_t* src, float* dst, int64_t n_elems);
// y = d * q per 32-element block.
void dequantize_row_q8_0(const BlockQ8_0* src, float* dst, int64_t n_elems);
// y = (d * sc) * q - dmin * m per 32-element sub-block.
void dequantize_row_q4_k(const BlockQ4K* src, float* dst, int64_t n_elems);
void dequantize_row_q5_k(const BlockQ5K* src, float* dst, int64_t n_elems);
// y = (d * sc) * (q - 32) per 16-element sub-block.
void dequantize_row_q6_k(const BlockQ6K* src, float* dst, int64_t n_elems);

// Round-to-nearest-even conversions (see half.h for NaN/overflow rules).
void quantize_row_f16(const float* src, uint16_t* dst, int64_t n_elems);
void quantize_row_bf16(const float* src, uint16_t* dst, int64_t n_elems);
// quantize_row_q8_0_ref: d = max|x| / 127, q = round(x / d) (halves away from zero).
void quantize_row_q8_0(const float* src, BlockQ8_0* dst, int64_t n_elems);
// quantize_row_q{4,5}_K_ref: weighted scale/min search per sub-block, 6-bit scales and mins.
void quantize_row_q4_k(const float* src, BlockQ4K* dst, int64_t n_elems);
void quantize_row_q5_k(const float* src, BlockQ5K* dst, int64_t n_elems);
// quantize_row_q6_K_ref: symmetric x^2-weighted scale search per sub-block, 8-bit scales.
void quantize_row_q6_k(const float* src, BlockQ6K* dst, int64_t n_elems);

}  // namespace gufo::quant
