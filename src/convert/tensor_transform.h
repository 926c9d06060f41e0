// The numeric pieces of HF -> GGUF conversion that must match llama.cpp's converter exactly:
// the llama Q/K row permutation, the llama3 rope_freqs factors, and element decoding of the
// safetensors float types. Tested by tests/unit/convert/tensor_transform_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "convert/hf_config.h"
#include "core/dtype.h"

namespace gufo::convert {

// Source row of output row `out_row` under llama.cpp's LlamaModel.permute(w, n_head, ...)
// on a tensor of `n_rows` rows (dim 0), i.e.
//   w.reshape(n_head, 2, n_rows // n_head // 2, *rest).swapaxes(1, 2).reshape(w.shape)
// Output row h*head_dim + 2*i + j takes input row h*head_dim + j*(head_dim/2) + i.
// NOTE(convert): why it exists: HF Llama checkpoints order each head's q/k rows for
// rotate_half ("NeoX") RoPE, pairing dim i with i + head_dim/2; llama.cpp's `llama`
// architecture applies the interleaved ("normal") RoPE, pairing 2i with 2i+1. Permuting
// the rows makes the two agree, and every llama GGUF in the ecosystem is stored this way:
// Gufo's llama forward pass must use normal (interleaved) RoPE for that reason. qwen2,
// qwen3 and qwen3moe are NOT permuted: llama.cpp runs them with NeoX RoPE.
// n_rows must be a multiple of 2 * n_head (checked by the caller).
uint64_t llama_permuted_source_row(uint64_t out_row, uint64_t n_rows, uint32_t n_head);

// rope_freqs.weight for rope_type llama3, as LlamaModel.generate_extra_tensors writes it:
// head_dim/2 factors, one per rotated pair (1 for high frequencies, `factor` for low ones,
// a smooth blend between). Computed in float32 in the same order of operations as the
// Python (torch float32 tensors), so values match to the last bit or within an ulp of powf.
std::vector<float> llama3_rope_factors(const HfConfig& config);

// Element `index` of a little-endian F32/F16/BF16 buffer as fp32 (memcpy: the safetensors
// data may sit at any address). F16/BF16 widen exactly.
float decode_element(DType type, const std::byte* data, uint64_t index);

}  // namespace gufo::convert
