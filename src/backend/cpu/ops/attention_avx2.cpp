// attend() with AVX2 + FMA + F16C (see ops.h): the same causal attention over an f16 or f32
// KV cache, organised for speed. This file alone is compiled with -mavx2 -mfma -mf16c and is
// called only after cpuid says so (cpu_backend.cpp). Tested against the scalar attend() by
// tests/unit/backend/attention_test.cpp over random shapes, GQA groups and cache types.
//
// Differences from the scalar reference, all within float rounding:
// - the query heads that share a KV head (GQA) are handled together, so each K and V row of
//   the cache is loaded and widened from f16 once for the whole group;
// - sums run in 8 lanes, and exp() is a polynomial (Cephes' expf, ~1 ulp on the softmax's
//   range of x <= 0) evaluated 8 at a time.
//
// NOTE(avx2): no inline function from a shared header and no std:: algorithm is used here
// (see quant/dot_avx2.cpp: the linker could keep this file's AVX2 copy for the whole program).
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/ops/ops.h"

namespace gufo::cpu {
namespace {

constexpr int64_t kMaxGroupChunk = 4;  // query heads scored together (registers: 4 + 1)

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Eight elements of a cache row (f16 or f32) as f32.
__m256 load8(const void* row, bool f16, int64_t j) {
  if (f16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + j)));
  return _mm256_loadu_ps(static_cast<const float*>(row) + j);
}

// One element of a cache row as f32 (the tail when head_dim % 8 != 0).
float load1(const void* row, bool f16, int64_t j) {
  if (f16) return _cvtsh_ss(static_cast<const uint16_t*>(row)[j]);
  return static_cast<const float*>(row)[j];
}

// Cephes expf: e^x = 2^n · e^r with n = round(x / ln 2), |r| <= ln(2)/2, e^r by a degree-5
// polynomial; ln 2 split in two constants so r is computed without cancellation error.
__m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));  // below, e^x is under FLT_MIN: flush to ~0
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(pow2n));
}

float exp1(float x) {
  const __m256 v = exp8(_mm256_set1_ps(x));
  return _mm256_cvtss_f32(v);
}

// scores[g][p] = scale · q_g · k_p for the `count` query heads of one chunk.
void score_chunk(const KvView& kv, bool f16, int64_t kv_offset, const float* const* q, int64_t count,
                 int64_t head_dim, int64_t n_pos, float scale, float* const* scores) {
  const int64_t vec_end = head_dim - head_dim % 8;
  for (int64_t p = 0; p < n_pos; ++p) {
    const void* k_row = f16 ? static_cast<const void*>(static_cast<const uint16_t*>(kv.k) + p * kv.n_embd_kv + kv_offset)
                            : static_cast<const void*>(static_cast<const float*>(kv.k) + p * kv.n_embd_kv + kv_offset);
    __m256 acc[kMaxGroupChunk];
    for (int64_t g = 0; g < count; ++g) acc[g] = _mm256_setzero_ps();
    for (int64_t j = 0; j < vec_end; j += 8) {
      const __m256 k8 = load8(k_row, f16, j);
      for (int64_t g = 0; g < count; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q[g] + j), k8, acc[g]);
    }
    for (int64_t g = 0; g < count; ++g) {
      float dot = hsum(acc[g]);
      for (int64_t j = vec_end; j < head_dim; ++j) dot += q[g][j] * load1(k_row, f16, j);
      scores[g][p] = dot * scale;
    }
  }
}

// In place: scores -> softmax weights (e^(s - max) / sum).
void softmax(float* scores, int64_t n) {
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  int64_t p = 0;
  for (; p + 8 <= n; p += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(scores + p));
  float max_score = hmax(vmax);
  for (; p < n; ++p) max_score = scores[p] > max_score ? scores[p] : max_score;
  const __m256 m = _mm256_set1_ps(max_score);
  __m256 vsum = _mm256_setzero_ps();
  p = 0;
  for (; p + 8 <= n; p += 8) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + p), m));
    _mm256_storeu_ps(scores + p, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = hsum(vsum);
  for (; p < n; ++p) {
    scores[p] = exp1(scores[p] - max_score);
    sum += scores[p];
  }
  const __m256 inv = _mm256_set1_ps(1.0f / sum);
  p = 0;
  for (; p + 8 <= n; p += 8) _mm256_storeu_ps(scores + p, _mm256_mul_ps(_mm256_loadu_ps(scores + p), inv));
  for (; p < n; ++p) scores[p] *= 1.0f / sum;
}

// out_g = sum_p weights[g][p] · v_p for the `count` query heads of one chunk.
void mix_chunk(const KvView& kv, bool f16, int64_t kv_offset, float* const* weights, int64_t count, int64_t head_dim,
               int64_t n_pos, float* const* out) {
  const int64_t vec_end = head_dim - head_dim % 8;
  for (int64_t g = 0; g < count; ++g) {
    for (int64_t j = 0; j < head_dim; ++j) out[g][j] = 0.0f;
  }
  for (int64_t p = 0; p < n_pos; ++p) {
    const void* v_row = f16 ? static_cast<const void*>(static_cast<const uint16_t*>(kv.v) + p * kv.n_embd_kv + kv_offset)
                            : static_cast<const void*>(static_cast<const float*>(kv.v) + p * kv.n_embd_kv + kv_offset);
    for (int64_t j = 0; j < vec_end; j += 8) {
      const __m256 v8 = load8(v_row, f16, j);
      for (int64_t g = 0; g < count; ++g) {
        _mm256_storeu_ps(out[g] + j, _mm256_fmadd_ps(_mm256_set1_ps(weights[g][p]), v8, _mm256_loadu_ps(out[g] + j)));
      }
    }
    for (int64_t j = vec_end; j < head_dim; ++j) {
      const float v = load1(v_row, f16, j);
      for (int64_t g = 0; g < count; ++g) out[g][j] += weights[g][p] * v;
    }
  }
}

}  // namespace

void attend_avx2(const KvView& kv, const AttentionShape& shape, const float* q, int32_t position,
                 int64_t kv_head_first, int64_t kv_head_end, float* scratch, float* out) {
  const bool f16 = kv.type == DType::F16;
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t n_pos = static_cast<int64_t>(position) + 1;
  for (int64_t kv_head = kv_head_first; kv_head < kv_head_end; ++kv_head) {
    const int64_t kv_offset = kv_head * shape.head_dim;
    for (int64_t first = 0; first < group; first += kMaxGroupChunk) {
      const int64_t count = group - first < kMaxGroupChunk ? group - first : kMaxGroupChunk;
      const float* q_heads[kMaxGroupChunk];
      float* scores[kMaxGroupChunk];
      float* out_heads[kMaxGroupChunk];
      for (int64_t g = 0; g < count; ++g) {
        const int64_t head = kv_head * group + first + g;
        q_heads[g] = q + head * shape.head_dim;
        scores[g] = scratch + g * n_pos;
        out_heads[g] = out + head * shape.head_dim;
      }
      score_chunk(kv, f16, kv_offset, q_heads, count, shape.head_dim, n_pos, shape.scale, scores);
      for (int64_t g = 0; g < count; ++g) softmax(scores[g], n_pos);
      mix_chunk(kv, f16, kv_offset, scores, count, shape.head_dim, n_pos, out_heads);
    }
  }
}

}  // namespace gufo::cpu
