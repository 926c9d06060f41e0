// Q/K permutation, llama3 rope factors, element decoding (see tensor_transform.h).
// Source of truth: ggml-org/llama.cpp convert_hf_to_gguf.py (conversion/llama.py in newer
// trees), LlamaModel.permute and LlamaModel.generate_extra_tensors.
// Tested by tests/unit/convert/tensor_transform_test.cpp.
#include "convert/tensor_transform.h"

#include <cmath>
#include <cstring>
#include <numbers>

#include "core/check.h"
#include "quant/half.h"

namespace gufo::convert {

uint64_t llama_permuted_source_row(uint64_t out_row, uint64_t n_rows, uint32_t n_head) {
  GUFO_CHECK(n_head > 0 && n_rows % (2ull * n_head) == 0 && out_row < n_rows);
  const uint64_t head_dim = n_rows / n_head;
  const uint64_t half = head_dim / 2;
  const uint64_t head = out_row / head_dim;
  const uint64_t within = out_row % head_dim;  // = 2*i + j after the swap of axes 1 and 2
  const uint64_t i = within / 2;
  const uint64_t j = within % 2;
  return head * head_dim + j * half + i;
}

std::vector<float> llama3_rope_factors(const HfConfig& config) {
  const RopeScaling& rope = config.rope_scaling;
  // NOTE(convert): the base defaults to 10000 as in llama.cpp (rope_params.get("rope_theta",
  // 10000.0)); the context length is rope_scaling.original_max_position_embeddings, which
  // is where transformers (_compute_llama3_parameters) reads it. llama.cpp reads a top-level
  // original_max_position_embeddings with fallback 8192 instead; real Llama 3.x configs
  // have 8192 in rope_scaling and none at the top, so both agree on every released model.
  const auto base = static_cast<float>(config.rope_theta.value_or(10000.0));
  const uint32_t dim = config.head_dim;
  const auto old_context_len = static_cast<float>(rope.original_max_position_embeddings.value_or(8192));
  const auto factor = static_cast<float>(rope.factor);
  const auto low_freq_factor = static_cast<float>(rope.low_freq_factor);
  // Python computes these two in double, then compares float32 tensors against them.
  const double low_freq_wavelen = static_cast<double>(old_context_len) / rope.low_freq_factor;
  const double high_freq_wavelen = static_cast<double>(old_context_len) / rope.high_freq_factor;
  // (high - low) is a Python double before it meets the float32 tensor.
  const auto freq_span = static_cast<float>(rope.high_freq_factor - rope.low_freq_factor);
  const auto two_pi = static_cast<float>(2.0 * std::numbers::pi);

  std::vector<float> factors;
  factors.reserve(dim / 2);
  for (uint32_t i = 0; i < dim; i += 2) {
    // freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=float32) / dim))
    const float exponent = static_cast<float>(i) / static_cast<float>(dim);
    const float freq = 1.0f / std::pow(base, exponent);
    const float wavelen = two_pi / freq;
    if (static_cast<double>(wavelen) < high_freq_wavelen) {
      factors.push_back(1.0f);
    } else if (static_cast<double>(wavelen) > low_freq_wavelen) {
      factors.push_back(factor);
    } else {
      const float smooth = (old_context_len / wavelen - low_freq_factor) / freq_span;
      factors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
    }
  }
  return factors;
}

float decode_element(DType type, const std::byte* data, uint64_t index) {
  switch (type) {
    case DType::F32: {
      float value;
      std::memcpy(&value, data + index * 4, sizeof value);
      return value;
    }
    case DType::F16: {
      uint16_t bits;
      std::memcpy(&bits, data + index * 2, sizeof bits);
      return quant::fp16_to_fp32(bits);
    }
    case DType::BF16: {
      uint16_t bits;
      std::memcpy(&bits, data + index * 2, sizeof bits);
      return quant::bf16_to_fp32(bits);
    }
    default:
      GUFO_CHECK(false && "decode_element: only F32, F16, BF16 (the safetensors reader's set)");
  }
  return 0.0f;
}

}  // namespace gufo::convert
