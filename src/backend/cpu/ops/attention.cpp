// KV-cache store and causal attention for one query row, scalar reference (see ops.h).
// Grouped-query attention: query head h reads KV head h / (n_head / n_head_kv).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "quant/half.h"

namespace gufo::cpu {

namespace {

float load(const KvView& kv, const void* base, int64_t index) {
  if (kv.type == DType::F32) return static_cast<const float*>(base)[index];
  return quant::fp16_to_fp32(static_cast<const uint16_t*>(base)[index]);
}

}  // namespace

bool attend_avx2_available() {
#if defined(GUFO_CPU_HAVE_AVX2_KERNELS)
  return fast::detected_cpu_features().avx2;
#else
  return false;
#endif
}

#if !defined(GUFO_CPU_HAVE_AVX2_KERNELS)
void attend_avx2(const KvView& kv, const AttentionShape& shape, const float* q, int32_t position, int64_t, int64_t,
                 float* scratch, float* out) {
  attend(kv, shape, q, position, scratch, out);  // never chosen: attend_avx2_available() is false
}
#endif

void kv_store(const KvView& kv, int32_t position, const float* k_row, const float* v_row) {
  const int64_t offset = kv.row_offset(position);
  if (kv.type == DType::F32) {
    std::memcpy(static_cast<float*>(kv.k) + offset, k_row, sizeof(float) * kv.n_embd_kv);
    std::memcpy(static_cast<float*>(kv.v) + offset, v_row, sizeof(float) * kv.n_embd_kv);
    return;
  }
  for (int64_t j = 0; j < kv.n_embd_kv; ++j) {
    static_cast<uint16_t*>(kv.k)[offset + j] = quant::fp32_to_fp16(k_row[j]);
    static_cast<uint16_t*>(kv.v)[offset + j] = quant::fp32_to_fp16(v_row[j]);
  }
}

void attend(const KvView& kv, const AttentionShape& shape, const float* q, int32_t position, float* scratch,
            float* out) {
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t n_pos = static_cast<int64_t>(position) + 1;
  for (int64_t head = 0; head < shape.n_head; ++head) {
    const float* qh = q + head * shape.head_dim;
    const int64_t kv_offset = (head / group) * shape.head_dim;
    float max_score = -INFINITY;
    for (int64_t p = 0; p < n_pos; ++p) {
      float dot = 0.0f;
      for (int64_t j = 0; j < shape.head_dim; ++j) {
        dot += qh[j] * load(kv, kv.k, kv.row_offset(p) + kv_offset + j);
      }
      scratch[p] = dot * shape.scale;
      max_score = std::max(max_score, scratch[p]);
    }
    float sum = 0.0f;
    for (int64_t p = 0; p < n_pos; ++p) {
      scratch[p] = std::exp(scratch[p] - max_score);
      sum += scratch[p];
    }
    float* oh = out + head * shape.head_dim;
    std::fill(oh, oh + shape.head_dim, 0.0f);
    for (int64_t p = 0; p < n_pos; ++p) {
      const float weight = scratch[p] / sum;
      for (int64_t j = 0; j < shape.head_dim; ++j) {
        oh[j] += weight * load(kv, kv.v, kv.row_offset(p) + kv_offset + j);
      }
    }
  }
}

}  // namespace gufo::cpu
