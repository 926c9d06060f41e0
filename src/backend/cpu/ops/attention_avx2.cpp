// attend() with AVX2 + FMA + F16C (see ops.h): the same causal attention over an f16 or f32
// KV cache, organised for speed. This file alone is compiled with -mavx2 -mfma -mf16c and is
// called only after cpuid says so (cpu_backend.cpp). Tested against the scalar attend() by
// tests/unit/backend/attention_test.cpp over random shapes, GQA groups and cache types.
//
// Differences from the scalar reference, all within float rounding:
// - scores are computed for eight positions at once (a lane per position, fused multiply-adds
//   in element order), and the V mix keeps 32 output columns in registers across all
//   positions (fused multiply-adds in position order);
// - exp() is a polynomial (Cephes' expf, ~1 ulp on the softmax's range of x <= 0) evaluated
//   8 at a time, and the softmax sum runs in 8 lanes.
//
// NOTE(avx2): no inline function from a shared header and no std:: algorithm is used here
// (see quant/dot_avx2.cpp: the linker could keep this file's AVX2 copy for the whole program).
#include <immintrin.h>

#include <cmath>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/quant/avx2_common.h"

namespace gufo::cpu {
namespace {

using avx2::fma1;
using avx2::hmax;
using avx2::hsum;
using avx2::transpose8x8;

// Eight elements of a cache row (f16 or f32) as f32.
__m256 load8(const void* row, bool f16, int64_t j) {
  if (f16)
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(static_cast<const uint16_t*>(row) + j)));
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

const void* cache_row(const void* base, bool f16, int64_t index) {
  if (f16) return static_cast<const uint16_t*>(base) + index;
  return static_cast<const float*>(base) + index;
}

// NOTE(attention_avx2): every path computes a score as score_tile does (below): with a lane
// per position, acc = fma(q[j], k_p[j], acc) for j = 0, 1, ..., head_dim - 1, then acc * scale;
// and an output column as mix_tile does: acc = fma(w_p, v_p[j], acc) for p = 0, 1, ...,
// n_pos - 1. Softmax is one function. So a row's attention is the same bits whether it ran
// alone (decode, short chunks: attend_avx2) or in a prefill batch (attend_rows_avx2), which
// the server's prefix cache and continuous batching rely on.

// scores[a][p] = scale * q_a . k_p for kQueries query heads of one KV head and p < n_pos, read
// from the cache eight positions at a time: each 8 x 8 piece of K is transposed in registers
// and then serves every query head.
template <int kQueries>
void score_heads(const KvView& kv, bool f16, int64_t kv_offset, const float* const* q, int64_t head_dim, int64_t n_pos,
                 float scale, float* const* scores) {
  const int64_t vec_end = head_dim - head_dim % 8;
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int64_t p = 0; p < n_pos; p += 8) {
    const int64_t n = n_pos - p < 8 ? n_pos - p : 8;
    const void* rows[8];
    for (int i = 0; i < 8; ++i) {
      // Lanes past the last position repeat row p; their scores are never stored.
      rows[i] = cache_row(kv.k, f16, kv.row_offset(p + (i < n ? i : 0)) + kv_offset);
    }
    __m256 acc[kQueries];
#pragma GCC unroll 4
    for (int a = 0; a < kQueries; ++a) acc[a] = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j < vec_end; j += 8) {
      __m256 k[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i) k[i] = load8(rows[i], f16, j);
      transpose8x8(k);  // k[m]: element j + m of the eight rows
#pragma GCC unroll 8
      for (int m = 0; m < 8; ++m) {
#pragma GCC unroll 4
        for (int a = 0; a < kQueries; ++a) acc[a] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[a] + j + m), k[m], acc[a]);
      }
    }
    for (; j < head_dim; ++j) {
      const __m256 k = _mm256_setr_ps(load1(rows[0], f16, j), load1(rows[1], f16, j), load1(rows[2], f16, j),
                                      load1(rows[3], f16, j), load1(rows[4], f16, j), load1(rows[5], f16, j),
                                      load1(rows[6], f16, j), load1(rows[7], f16, j));
#pragma GCC unroll 4
      for (int a = 0; a < kQueries; ++a) acc[a] = _mm256_fmadd_ps(_mm256_broadcast_ss(q[a] + j), k, acc[a]);
    }
#pragma GCC unroll 4
    for (int a = 0; a < kQueries; ++a) {
      alignas(32) float lanes[8];
      _mm256_store_ps(lanes, _mm256_mul_ps(acc[a], vscale));
      for (int64_t i = 0; i < n; ++i) scores[a][p + i] = lanes[i];
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

// out = sum_p weights[p] · v_p, 32 columns at a time held in four accumulators across all
// positions (no stores in the inner loop), then 8 at a time, then a scalar tail.
void mix_head(const KvView& kv, bool f16, int64_t kv_offset, const float* weights, int64_t head_dim, int64_t n_pos,
              float* out) {
  int64_t j = 0;
  for (; j + 32 <= head_dim; j += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int64_t p = 0; p < n_pos; ++p) {
      const void* row = cache_row(kv.v, f16, kv.row_offset(p) + kv_offset);
      const __m256 w = _mm256_set1_ps(weights[p]);
      a0 = _mm256_fmadd_ps(w, load8(row, f16, j), a0);
      a1 = _mm256_fmadd_ps(w, load8(row, f16, j + 8), a1);
      a2 = _mm256_fmadd_ps(w, load8(row, f16, j + 16), a2);
      a3 = _mm256_fmadd_ps(w, load8(row, f16, j + 24), a3);
    }
    _mm256_storeu_ps(out + j, a0);
    _mm256_storeu_ps(out + j + 8, a1);
    _mm256_storeu_ps(out + j + 16, a2);
    _mm256_storeu_ps(out + j + 24, a3);
  }
  for (; j + 8 <= head_dim; j += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t p = 0; p < n_pos; ++p) {
      a = _mm256_fmadd_ps(_mm256_set1_ps(weights[p]), load8(cache_row(kv.v, f16, kv.row_offset(p) + kv_offset), f16, j),
                          a);
    }
    _mm256_storeu_ps(out + j, a);
  }
  for (; j < head_dim; ++j) {
    float a = 0.0f;
    for (int64_t p = 0; p < n_pos; ++p)
      a = fma1(weights[p], load1(cache_row(kv.v, f16, kv.row_offset(p) + kv_offset), f16, j), a);
    out[j] = a;
  }
}

// Keys of one KV head as f32, transposed: kt[j * stride + p] is element j of position p, so
// that eight consecutive positions are one vector. Positions n_pos..stride-1 are zero.
// Values of the head as f32 rows: v[p * head_dim + j].
void widen_head(const KvView& kv, bool f16, int64_t kv_offset, int64_t head_dim, int64_t n_pos, int64_t stride,
                float* kt, float* v) {
  for (int64_t p = 0; p < n_pos; ++p) {
    const void* k_row = cache_row(kv.k, f16, kv.row_offset(p) + kv_offset);
    const void* v_row = cache_row(kv.v, f16, kv.row_offset(p) + kv_offset);
    int64_t j = 0;
    for (; j + 8 <= head_dim; j += 8) {
      alignas(32) float k8[8];
      _mm256_store_ps(k8, load8(k_row, f16, j));
      for (int i = 0; i < 8; ++i) kt[(j + i) * stride + p] = k8[i];
      _mm256_storeu_ps(v + p * head_dim + j, load8(v_row, f16, j));
    }
    for (; j < head_dim; ++j) {
      kt[j * stride + p] = load1(k_row, f16, j);
      v[p * head_dim + j] = load1(v_row, f16, j);
    }
  }
  for (int64_t j = 0; j < head_dim; ++j) {
    for (int64_t p = n_pos; p < stride; ++p) kt[j * stride + p] = 0.0f;
  }
}

// scores[q][p] = scale * q_q . k_p for kQueries queries and positions p < n_pos (rounded up to
// a whole tile; the extra scores are junk the caller ignores). A tile is kQueries queries x
// 8 / kQueries vectors of positions: eight accumulators, so the FMA latency is hidden, and
// each key vector is loaded once for all queries.
template <int kQueries>
void score_tile(const float* kt, int64_t stride, const float* const* q, int64_t head_dim, int64_t n_pos, float scale,
                float* const* scores) {
  constexpr int kVectors = 8 / kQueries;
  const __m256 vscale = _mm256_set1_ps(scale);
  for (int64_t p = 0; p < n_pos; p += 8 * kVectors) {
    __m256 acc[kQueries][kVectors];
#pragma GCC unroll 8
    for (int a = 0; a < kQueries; ++a) {
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) acc[a][v] = _mm256_setzero_ps();
    }
    for (int64_t j = 0; j < head_dim; ++j) {
      __m256 k[kVectors];
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) k[v] = _mm256_loadu_ps(kt + j * stride + p + 8 * v);
#pragma GCC unroll 8
      for (int a = 0; a < kQueries; ++a) {
        const __m256 qj = _mm256_broadcast_ss(q[a] + j);
#pragma GCC unroll 8
        for (int v = 0; v < kVectors; ++v) acc[a][v] = _mm256_fmadd_ps(qj, k[v], acc[a][v]);
      }
    }
#pragma GCC unroll 8
    for (int a = 0; a < kQueries; ++a) {
#pragma GCC unroll 8
      for (int v = 0; v < kVectors; ++v) _mm256_storeu_ps(scores[a] + p + 8 * v, _mm256_mul_ps(acc[a][v], vscale));
    }
  }
}

// out_q = sum_p weights_q[p] * v_p for kQueries queries: tiles of kQueries queries x
// 8 / kQueries column vectors, so each V vector is loaded once for all queries.
template <int kQueries>
void mix_tile(const float* v, int64_t head_dim, const float* const* weights, int64_t n_pos, float* const* out) {
  constexpr int kVectors = 8 / kQueries;
  int64_t j = 0;
  for (; j + 8 * kVectors <= head_dim; j += 8 * kVectors) {
    __m256 acc[kQueries][kVectors];
#pragma GCC unroll 8
    for (int a = 0; a < kQueries; ++a) {
#pragma GCC unroll 8
      for (int c = 0; c < kVectors; ++c) acc[a][c] = _mm256_setzero_ps();
    }
    for (int64_t p = 0; p < n_pos; ++p) {
      __m256 vv[kVectors];
#pragma GCC unroll 8
      for (int c = 0; c < kVectors; ++c) vv[c] = _mm256_loadu_ps(v + p * head_dim + j + 8 * c);
#pragma GCC unroll 8
      for (int a = 0; a < kQueries; ++a) {
        const __m256 w = _mm256_broadcast_ss(weights[a] + p);
#pragma GCC unroll 8
        for (int c = 0; c < kVectors; ++c) acc[a][c] = _mm256_fmadd_ps(w, vv[c], acc[a][c]);
      }
    }
#pragma GCC unroll 8
    for (int a = 0; a < kQueries; ++a) {
#pragma GCC unroll 8
      for (int c = 0; c < kVectors; ++c) _mm256_storeu_ps(out[a] + j + 8 * c, acc[a][c]);
    }
  }
  for (; j < head_dim; ++j) {  // columns left over (head_dim not a multiple of the tile)
#pragma GCC unroll 8
    for (int a = 0; a < kQueries; ++a) {
      float sum = 0.0f;
      for (int64_t p = 0; p < n_pos; ++p) sum = fma1(weights[a][p], v[p * head_dim + j], sum);
      out[a][j] = sum;
    }
  }
}

// kQueries query heads of one row, sharing the widened head: scores, softmax, mix.
template <int kQueries>
void attend_queries(const float* kt, int64_t stride, const float* v, const float* const* q, int64_t head_dim,
                    int64_t n_pos, float scale, float* scratch, float* const* out) {
  float* scores[kQueries];
  for (int a = 0; a < kQueries; ++a) scores[a] = scratch + a * stride;
  score_tile<kQueries>(kt, stride, q, head_dim, n_pos, scale, scores);
  for (int a = 0; a < kQueries; ++a) softmax(scores[a], n_pos);
  mix_tile<kQueries>(v, head_dim, scores, n_pos, out);
}

// NOTE(attention_avx2): the tile loops carry `#pragma GCC unroll` because GCC otherwise keeps
// the accumulator arrays in memory (attention then cost twice as much).

// Positions are padded to whole score tiles (64 positions for one query at a time).
constexpr int64_t kPositionTile = 64;

int64_t padded_positions(int64_t n_pos) { return (n_pos + kPositionTile - 1) / kPositionTile * kPositionTile; }

}  // namespace

int64_t attention_rows_scratch_floats(int32_t max_position) {
  return 4 * padded_positions(static_cast<int64_t>(max_position) + 1);
}

void attend_rows_avx2(const KvView& kv, const AttentionShape& shape, const AttentionRows& rows, int64_t kv_head,
                      std::vector<float>& head_kv, float* scratch) {
  const bool f16 = kv.type == DType::F16;
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t head_dim = shape.head_dim;
  int32_t max_position = -1;
  for (int64_t i = 0; i < rows.n_rows; ++i)
    max_position = rows.positions[i] > max_position ? rows.positions[i] : max_position;
  const int64_t n_pos = static_cast<int64_t>(max_position) + 1;
  const int64_t stride = padded_positions(n_pos);
  head_kv.resize(static_cast<size_t>((stride + n_pos) * head_dim));
  float* kt = head_kv.data();
  float* v = head_kv.data() + stride * head_dim;
  widen_head(kv, f16, kv_head * head_dim, head_dim, n_pos, stride, kt, v);
  for (int64_t i = 0; i < rows.n_rows; ++i) {
    const float* q_row = rows.q + rows.row_index[i] * rows.row_stride;
    float* out_row = rows.out + rows.row_index[i] * rows.row_stride;
    const int64_t row_pos = static_cast<int64_t>(rows.positions[i]) + 1;
    // The group's query heads, up to four at a time.
    for (int64_t g = 0; g < group;) {
      const int64_t n = group - g >= 4 ? 4 : (group - g >= 2 ? 2 : 1);
      const float* q[4];
      float* out[4];
      for (int64_t a = 0; a < n; ++a) {
        const int64_t h = kv_head * group + g + a;
        q[a] = q_row + h * head_dim;
        out[a] = out_row + h * head_dim;
      }
      if (n == 4) attend_queries<4>(kt, stride, v, q, head_dim, row_pos, shape.scale, scratch, out);
      if (n == 2) attend_queries<2>(kt, stride, v, q, head_dim, row_pos, shape.scale, scratch, out);
      if (n == 1) attend_queries<1>(kt, stride, v, q, head_dim, row_pos, shape.scale, scratch, out);
      g += n;
    }
  }
}

void attend_avx2(const KvView& kv, const AttentionShape& shape, const float* q, int32_t position, int64_t kv_head_first,
                 int64_t kv_head_end, float* scratch, float* out) {
  const bool f16 = kv.type == DType::F16;
  const int64_t group = shape.n_head / shape.n_head_kv;
  const int64_t n_pos = static_cast<int64_t>(position) + 1;
  for (int64_t kv_head = kv_head_first; kv_head < kv_head_end; ++kv_head) {
    const int64_t kv_offset = kv_head * shape.head_dim;
    // The group's query heads up to four at a time share each transposed piece of K; the
    // V rows they share stay in L1/L2.
    for (int64_t g = 0; g < group;) {
      const int64_t n = group - g >= 4 ? 4 : (group - g >= 2 ? 2 : 1);
      const float* qs[4];
      float* scores[4];
      for (int64_t a = 0; a < n; ++a) {
        qs[a] = q + (kv_head * group + g + a) * shape.head_dim;
        scores[a] = scratch + a * n_pos;
      }
      if (n == 4) score_heads<4>(kv, f16, kv_offset, qs, shape.head_dim, n_pos, shape.scale, scores);
      if (n == 2) score_heads<2>(kv, f16, kv_offset, qs, shape.head_dim, n_pos, shape.scale, scores);
      if (n == 1) score_heads<1>(kv, f16, kv_offset, qs, shape.head_dim, n_pos, shape.scale, scores);
      for (int64_t a = 0; a < n; ++a) {
        softmax(scores[a], n_pos);
        mix_head(kv, f16, kv_offset, scores[a], shape.head_dim, n_pos,
                 out + (kv_head * group + g + a) * shape.head_dim);
      }
      g += n;
    }
  }
}

}  // namespace gufo::cpu
