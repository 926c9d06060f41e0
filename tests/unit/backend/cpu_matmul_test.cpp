// The fast CPU matmul (ops/mat_mul_fast.cpp, quant/dot_*.cpp) against the reference mat_mul,
// for every weight type and every kernel set this CPU runs (scalar always; AVX2, AVX-512 and
// AVX-512 VNNI when present, the AVX-512 ones reported as skipped otherwise):
// random shapes, exact answers on adversarial inputs, and scalar-vs-SIMD agreement.
// Run: ctest --preset unit -R CpuMatMul (or build/<preset>/tests/unit/backend/cpu_ops_test).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "core/dtype.h"
#include "quant/half.h"
#include "quant/quant.h"

namespace gufo::cpu {
namespace {

using fast::DotKernels;

constexpr DType kAllTypes[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool is_float_type(DType type) { return type == DType::F32 || type == DType::F16 || type == DType::BF16; }

// A weight [n_out, k] with its bytes.
struct OwnedWeight {
  std::vector<std::byte> bytes;
  model::Weight weight;
};

OwnedWeight make_weight(DType type, int64_t n_out, int64_t k, std::vector<std::byte> bytes) {
  OwnedWeight owned;
  owned.bytes = std::move(bytes);
  owned.weight.name = "test." + std::string(dtype_name(type));
  owned.weight.type = type;
  owned.weight.rows = n_out;
  owned.weight.cols = k;
  owned.weight.row_bytes = dtype_row_bytes(dtype_info(type), static_cast<uint64_t>(k));
  owned.weight.data = owned.bytes.data();
  return owned;
}

OwnedWeight quantized_weight(DType type, int64_t n_out, int64_t k, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 0.05f);
  const size_t row_bytes = dtype_row_bytes(dtype_info(type), static_cast<uint64_t>(k));
  std::vector<std::byte> bytes(row_bytes * static_cast<size_t>(n_out));
  std::vector<float> row(static_cast<size_t>(k));
  for (int64_t n = 0; n < n_out; ++n) {
    for (float& v : row) v = normal(rng);
    const Status s = quant::quantize_row(type, row.data(), k, bytes.data() + n * row_bytes, row_bytes);
    EXPECT_TRUE(s.ok()) << s.error().message;
  }
  return make_weight(type, n_out, k, std::move(bytes));
}

// Every kernel set this machine can run (scalar first: the others are compared with it).
std::vector<const DotKernels*> kernel_sets() {
  const fast::CpuFeatures& features = fast::detected_cpu_features();
  std::vector<const DotKernels*> sets = {&fast::scalar_dot_kernels()};
  for (const DotKernels* set :
       {fast::avx2_dot_kernels(features), fast::avx512_dot_kernels(features), fast::avx512vnni_dot_kernels(features)}) {
    if (set != nullptr) sets.push_back(set);
  }
  return sets;
}

// x as the quantized-activation kernels see it: quantized, then widened back to f32.
std::vector<float> activation_as_seen(DType type, const std::vector<float>& x, int64_t rows, int64_t k) {
  std::vector<float> seen = x;
  if (fast::activation_format(type) == fast::ActivationFormat::Q8_0) {
    std::vector<fast::ActBlockQ8_0> blocks(static_cast<size_t>(k / 32));
    for (int64_t r = 0; r < rows; ++r) {
      fast::quantize_activation_q8_0(x.data() + r * k, blocks.data(), k);
      for (int64_t j = 0; j < k; ++j) seen[r * k + j] = blocks[j / 32].d * blocks[j / 32].qs[j % 32];
    }
  } else if (fast::activation_format(type) == fast::ActivationFormat::Q8K) {
    std::vector<quant::BlockQ8K> blocks(static_cast<size_t>(k / 256));
    for (int64_t r = 0; r < rows; ++r) {
      fast::quantize_activation_q8_k(x.data() + r * k, blocks.data(), k);
      for (int64_t j = 0; j < k; ++j) {
        seen[r * k + j] = blocks[j / 256].d * blocks[j / 256].qs[j % 256];
      }
    }
  }
  return seen;
}

std::vector<float> dequantized(const model::Weight& w) {
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t n = 0; n < w.rows; ++n) {
    EXPECT_TRUE(
        quant::dequantize_row(w.type, w.data + n * w.row_bytes, w.row_bytes, out.data() + n * w.cols, w.cols).ok());
  }
  return out;
}

std::vector<float> run(ThreadPool& pool, const DotKernels* kernels, const std::vector<float>& x, int64_t rows,
                       int64_t k, const model::Weight& w) {
  std::vector<float> out(static_cast<size_t>(rows * w.rows), -1.0f);
  const Status s = kernels == nullptr ? mat_mul(pool, x.data(), rows, k, w, out.data())
                                      : mat_mul_fast(pool, *kernels, x.data(), rows, k, w, out.data());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out;
}

double nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0.0, ref = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    err += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    ref += static_cast<double>(want[i]) * want[i];
  }
  return ref > 0.0 ? err / ref : err;
}

// NOTE(cpu_matmul): a change of summation order moves a k-term f32 dot by at most
// (k - 1) * 2^-24 * sum|x w| and in practice by about sqrt(k) * 2^-24 * sum|x w| (~4e-6 at
// k = 4096). 1e-5 * sum|x w| sits well above that, while one wrong or dropped element (about
// 1/k of sum|x w|, 2.4e-4 at k = 4096) fails it.
constexpr double kReorderTolerance = 1e-5;

// NOTE(cpu_matmul): the quantized paths round each activation to 8 bits per block with
// d = max|x| / 127, an error of about d / sqrt(12) per element: for Gaussian activations
// (max ~ 2.2 sigma per 32, ~3 sigma per 256) that is a relative noise power of 2.5e-5 (Q8_0)
// to 5e-5 (Q8_K), which the dot products carry over as output NMSE. ggml's test-backend-ops
// allows 5e-4 NMSE for mul_mat for the same reason; we use that bound (10x the expectation).
// The measured values are printed, and the exactness of the integer kernels themselves is
// checked separately, against the reference fed the activation as the kernel sees it.
constexpr double kQuantizedActivationNmse = 5e-4;

// |got - want| <= tolerance * sum_j |x_j w_j| for every output.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, const std::vector<float>& x,
                  const std::vector<float>& w, int64_t rows, int64_t n_out, int64_t k, const std::string& what) {
  int failures = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t n = 0; n < n_out; ++n) {
      double abs_sum = 0.0;
      for (int64_t j = 0; j < k; ++j) abs_sum += std::fabs(double{x[r * k + j]} * w[n * k + j]);
      const size_t i = static_cast<size_t>(r * n_out + n);
      if (!(std::fabs(double{got[i]} - want[i]) <= kReorderTolerance * abs_sum + 1e-30) && failures++ < 5) {
        ADD_FAILURE() << what << " r=" << r << " n=" << n << ": got " << got[i] << " want " << want[i] << " (sum|xw| "
                      << abs_sum << ")";
      }
    }
  }
}

struct Shape {
  int64_t rows, k, n_out;
};

TEST(CpuMatMul, RandomShapesAgainstReference) {
  ThreadPool pool(2);
  std::mt19937 rng(1234);
  const Shape shapes[] = {{1, 256, 1},
                          {1, 4096, 67},
                          {2, 512, 33},
                          {3, 768, 17},
                          {4, 1024, 5},
                          {5, 2048, 31},
                          {6, 256, 129},
                          {7, 1536, 9},
                          {7, 4096, 13},
                          {1, 3072, 255},
                          // Batches that take packed panels (8+ rows): whole panels only,
                          // panels plus leftover weight rows, partial activation tiles.
                          {8, 256, 8},
                          {13, 1024, 41},
                          {9, 512, 64},
                          {34, 2304, 100},
                          {17, 512, 24}};
  for (DType type : kAllTypes) {
    double worst_nmse = 0.0;
    std::vector<float> pooled_got, pooled_want;  // over all shapes and kernel sets
    for (const Shape& shape : shapes) {
      const std::string what = std::string(dtype_name(type)) + " rows=" + std::to_string(shape.rows) +
                               " k=" + std::to_string(shape.k) + " n=" + std::to_string(shape.n_out);
      OwnedWeight w = quantized_weight(type, shape.n_out, shape.k, rng);
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> x(static_cast<size_t>(shape.rows * shape.k));
      for (float& v : x) v = normal(rng);
      const std::vector<float> want = run(pool, nullptr, x, shape.rows, shape.k, w.weight);
      const std::vector<float> w_f32 = dequantized(w.weight);
      // The reference fed the activation exactly as the integer kernels see it: the fast path
      // must match it up to summation order (this is what catches a wrong block layout).
      const std::vector<float> x_seen = activation_as_seen(type, x, shape.rows, shape.k);
      const std::vector<float> want_seen = run(pool, nullptr, x_seen, shape.rows, shape.k, w.weight);
      std::vector<float> first;
      for (const DotKernels* kernels : kernel_sets()) {
        const std::vector<float> got = run(pool, kernels, x, shape.rows, shape.k, w.weight);
        expect_close(got, want_seen, x_seen, w_f32, shape.rows, shape.n_out, shape.k,
                     what + " " + kernels->name + " vs reference(seen activation)");
        if (is_float_type(type)) {
          expect_close(got, want, x, w_f32, shape.rows, shape.n_out, shape.k, what + " " + kernels->name);
        } else {
          // NOTE(cpu_matmul): NMSE of a handful of outputs is a ratio of two tiny sums and
          // heavy-tailed (one output near zero makes it blow up), so a shape is judged alone
          // only with 64+ outputs; all shapes of a type are pooled for the main check.
          const double e = nmse(got, want);
          if (shape.rows * shape.n_out >= 64) {
            worst_nmse = std::max(worst_nmse, e);
            EXPECT_LE(e, kQuantizedActivationNmse) << what << " " << kernels->name;
          }
          pooled_got.insert(pooled_got.end(), got.begin(), got.end());
          pooled_want.insert(pooled_want.end(), want.begin(), want.end());
        }
        if (first.empty()) {
          first = got;
        } else {  // scalar vs SIMD: the same integers, so only the float sums' order differs
          expect_close(got, first, x_seen, w_f32, shape.rows, shape.n_out, shape.k,
                       what + " " + kernels->name + " vs scalar");
        }
      }
    }
    if (!is_float_type(type)) {
      const double pooled = nmse(pooled_got, pooled_want);
      EXPECT_LE(pooled, kQuantizedActivationNmse) << dtype_name(type) << " pooled";
      std::printf(
          "[ info ] %s NMSE vs reference (f32 activation): pooled %.3g, worst shape "
          "with 64+ outputs %.3g\n",
          std::string(dtype_name(type)).c_str(), pooled, worst_nmse);
    }
  }
}

// Raw weight bytes of adversarial content: every quant code (including Q8_0's -128, the
// 15/31/63 maxima of the K-quants, 6-bit scales and mins of 63, Q6_K scales of -128), with
// the fp16 super-block scales set to 1 so every weight is a small integer.
std::vector<std::byte> adversarial_bytes(DType type, int64_t n_out, int64_t k, bool all_max, std::mt19937& rng) {
  const DTypeInfo info = dtype_info(type);
  const size_t row_bytes = dtype_row_bytes(info, static_cast<uint64_t>(k));
  std::vector<std::byte> bytes(row_bytes * static_cast<size_t>(n_out));
  std::uniform_int_distribution<int> byte_dist(0, 255);
  for (std::byte& b : bytes) b = all_max ? std::byte{0xff} : static_cast<std::byte>(byte_dist(rng));
  const uint16_t one = quant::fp32_to_fp16(1.0f);
  std::uniform_int_distribution<int> small(-2048, 2048);
  const int64_t n_blocks = static_cast<int64_t>(bytes.size() / info.block_bytes);
  for (int64_t b = 0; b < n_blocks; ++b) {
    std::byte* block = bytes.data() + b * info.block_bytes;
    switch (type) {
      case DType::F32: {
        const float v = all_max ? 2048.0f : static_cast<float>(small(rng));
        std::memcpy(block, &v, 4);
        break;
      }
      case DType::F16: {
        const uint16_t v = quant::fp32_to_fp16(all_max ? -2048.0f : static_cast<float>(small(rng)));
        std::memcpy(block, &v, 2);
        break;
      }
      case DType::BF16: {
        const uint16_t v = quant::fp32_to_bf16(all_max ? -2048.0f : static_cast<float>(small(rng)));
        std::memcpy(block, &v, 2);
        break;
      }
      case DType::Q8_0:
        std::memcpy(block, &one, 2);
        if (all_max) std::memset(block + 2, 0x80, 32);  // all -128
        break;
      case DType::Q4_K:
      case DType::Q5_K:
        std::memcpy(block, &one, 2);
        std::memcpy(block + 2, &one, 2);
        break;
      case DType::Q6_K:
        std::memcpy(block + 208, &one, 2);
        if (all_max) std::memset(block + 192, 0x80, 16);  // scales all -128
        break;
      default:
        break;
    }
  }
  return bytes;
}

// Integer weights and activations in {0, +-127} (sparse, so every partial sum stays below
// 2^24): the reference and every fast path must agree bit for bit.
// The kDotRows-row kernels and the kDotWeightRows x kDotRows tiles share loads and weight
// unpacking between rows but must give, pair by pair, exactly the one-row kernel's float
// (same integer sums, same accumulation order).
TEST(CpuMatMul, RowKernelsEqualOneRowKernelsBitForBit) {
  std::mt19937 rng(77);
  int checked = 0;
  for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    for (const DotKernels* kernels : kernel_sets()) {
      const fast::DotRowsFn rows_fn = fast::dot_rows_for(*kernels, type);
      if (rows_fn == nullptr) continue;
      const fast::DotFn one = fast::dot_for(*kernels, type);
      for (int64_t k : {256, 1024, 3072}) {
        OwnedWeight w = quantized_weight(type, 3, k, rng);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(fast::kDotRows * k));
        for (float& v : x) v = normal(rng);
        for (int64_t j = 0; j < k; j += 97) x[static_cast<size_t>(j)] *= 50.0f;  // outliers
        // The activation rows as the kernel wants them, one row after the other.
        std::vector<std::byte> act;
        size_t stride = 0;
        if (fast::activation_format(type) == fast::ActivationFormat::Q8_0) {
          std::vector<fast::ActBlockQ8_0> blocks(static_cast<size_t>(fast::kDotRows * k / 32));
          for (int r = 0; r < fast::kDotRows; ++r) {
            fast::quantize_activation_q8_0(x.data() + r * k, blocks.data() + r * k / 32, k);
          }
          stride = static_cast<size_t>(k / 32) * sizeof(fast::ActBlockQ8_0);
          act.resize(blocks.size() * sizeof(fast::ActBlockQ8_0));
          std::memcpy(act.data(), blocks.data(), act.size());
        } else {
          std::vector<quant::BlockQ8K> blocks(static_cast<size_t>(fast::kDotRows * k / 256));
          for (int r = 0; r < fast::kDotRows; ++r) {
            fast::quantize_activation_q8_k(x.data() + r * k, blocks.data() + r * k / 256, k);
          }
          stride = static_cast<size_t>(k / 256) * sizeof(quant::BlockQ8K);
          act.resize(blocks.size() * sizeof(quant::BlockQ8K));
          std::memcpy(act.data(), blocks.data(), act.size());
        }
        if (const fast::DotTileFn tile = fast::dot_tile_for(*kernels, type)) {
          float got[fast::kDotWeightRows * fast::kDotRows];
          tile(k, w.weight.data + w.weight.row_bytes, w.weight.row_bytes, act.data(), stride, got);  // rows 1, 2
          for (int i = 0; i < fast::kDotWeightRows; ++i) {
            for (int r = 0; r < fast::kDotRows; ++r) {
              const float want = one(k, w.weight.data + (1 + i) * w.weight.row_bytes, act.data() + r * stride);
              EXPECT_EQ(std::memcmp(&got[i * fast::kDotRows + r], &want, sizeof want), 0)
                  << dtype_name(type) << " " << kernels->name << " tile k=" << k << " weight row " << i << " row " << r;
              ++checked;
            }
          }
        }
        for (int64_t n = 0; n < 3; ++n) {
          const std::byte* w_row = w.weight.data + n * w.weight.row_bytes;
          float got[fast::kDotRows];
          rows_fn(k, w_row, act.data(), stride, got);
          for (int r = 0; r < fast::kDotRows; ++r) {
            const float want = one(k, w_row, act.data() + static_cast<size_t>(r) * stride);
            EXPECT_EQ(std::memcmp(&got[r], &want, sizeof want), 0)
                << dtype_name(type) << " " << kernels->name << " k=" << k << " row " << r << ": " << got[r] << " vs "
                << want;
            ++checked;
          }
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no kernel set with row kernels on this CPU";
}

// The contract of dot_kernels.h, "Accumulation order": for the quantized types, a matmul row
// is bit for bit the scalar kernel's result for that row alone, whatever kernel set runs it and
// whatever batch it is in: one-row dots, weight quads (1-3 rows), four-row kernels and tiles,
// packed panels (from 8 to 32 rows on) and the panels' partial row groups and leftover weight
// rows (43 = 5 panels + 3). The server's greedy answers rest on it (prefix-cache hits and
// continuous batching change which path a row takes).
TEST(CpuMatMul, EveryPathAndKernelSetGivesTheScalarBits) {
  std::mt19937 rng(2026);
  ThreadPool pool(2);
  for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    // Q8_0: odd block counts and fewer than four blocks too (the kernels' pair and quad tails).
    for (int64_t k : type == DType::Q8_0 ? std::vector<int64_t>{96, 352, 2816} : std::vector<int64_t>{256, 768, 2816}) {
      const int64_t n_out = 43;
      OwnedWeight w = quantized_weight(type, n_out, k, rng);
      const int64_t max_rows = 67;
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> x(static_cast<size_t>(max_rows * k));
      for (float& v : x) v = normal(rng);
      for (size_t j = 0; j < x.size(); j += 101) x[j] *= 40.0f;  // outliers
      // Each row alone through the scalar kernels: the reference bits.
      std::vector<float> want(static_cast<size_t>(max_rows * n_out));
      for (int64_t r = 0; r < max_rows; ++r) {
        ASSERT_TRUE(
            mat_mul_fast(pool, fast::scalar_dot_kernels(), x.data() + r * k, 1, k, w.weight, want.data() + r * n_out)
                .ok());
      }
      for (const DotKernels* kernels : kernel_sets()) {
        for (int64_t rows : {1, 2, 3, 4, 5, 8, 9, 16, 17, 33, 67}) {
          std::vector<float> got(static_cast<size_t>(rows * n_out), -1.0f);
          ASSERT_TRUE(mat_mul_fast(pool, *kernels, x.data(), rows, k, w.weight, got.data()).ok());
          int mismatches = 0;
          for (size_t i = 0; i < got.size(); ++i) mismatches += std::memcmp(&got[i], &want[i], sizeof(float)) != 0;
          EXPECT_EQ(mismatches, 0) << dtype_name(type) << " " << kernels->name << " k=" << k << " rows=" << rows
                                   << ": first " << got[0] << " vs " << want[0];
        }
      }
    }
  }
}

// Every kernel set's activation quantizers write exactly the scalar quantizers' bytes: the
// rounding of exact halves (away from zero), clamping, NaN (quant 0, skipped by the scale),
// infinities, denormals, zeros and random values.
TEST(CpuMatMul, ActivationQuantizersEqualScalarByteForByte) {
  std::mt19937 rng(5);
  const int64_t k = 2048;
  std::vector<float> x(static_cast<size_t>(k));
  std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
  for (int trial = 0; trial < 40; ++trial) {
    for (float& v : x) v = uniform(rng) * std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
    if (trial % 4 == 1) {
      // Blocks whose max is 127 so that x * 127 / max hits the halves n + 0.5 exactly.
      for (int64_t j = 0; j < k; ++j)
        x[j] = (j % 32 == 0) ? 127.0f : static_cast<float>(static_cast<int>(rng() % 253) - 126) + 0.5f * (j % 2);
    }
    if (trial % 4 == 2) {
      x[rng() % k] = std::numeric_limits<float>::quiet_NaN();
      x[rng() % k] = std::numeric_limits<float>::infinity();
      x[rng() % k] = std::numeric_limits<float>::denorm_min();
      for (int64_t j = 0; j < 64; ++j) x[j] = 0.0f;
    }
    std::vector<fast::ActBlockQ8_0> want_q8_0(static_cast<size_t>(k / 32));
    std::vector<quant::BlockQ8K> want_q8_k(static_cast<size_t>(k / 256));
    fast::quantize_activation_q8_0(x.data(), want_q8_0.data(), k);
    fast::quantize_activation_q8_k(x.data(), want_q8_k.data(), k);
    for (const DotKernels* kernels : kernel_sets()) {
      std::vector<fast::ActBlockQ8_0> got_q8_0(want_q8_0.size());
      std::vector<quant::BlockQ8K> got_q8_k(want_q8_k.size());
      kernels->quantize_q8_0(x.data(), got_q8_0.data(), k);
      kernels->quantize_q8_k(x.data(), got_q8_k.data(), k);
      ASSERT_EQ(std::memcmp(got_q8_0.data(), want_q8_0.data(), got_q8_0.size() * sizeof(got_q8_0[0])), 0)
          << kernels->name << " Q8_0 trial " << trial;
      ASSERT_EQ(std::memcmp(got_q8_k.data(), want_q8_k.data(), got_q8_k.size() * sizeof(got_q8_k[0])), 0)
          << kernels->name << " Q8_K trial " << trial;
    }
  }
}

TEST(CpuMatMul, ExactOnAdversarialInputs) {
  ThreadPool pool(2);
  std::mt19937 rng(99);
  for (DType type : kAllTypes) {
    for (bool all_max : {false, true}) {
      for (int64_t k : {256, 512}) {
        const int64_t rows = 5, n_out = 7;
        OwnedWeight w = make_weight(type, n_out, k, adversarial_bytes(type, n_out, k, all_max, rng));
        std::vector<float> x(static_cast<size_t>(rows * k), 0.0f);
        std::uniform_int_distribution<int64_t> pos(0, k - 1);
        for (int64_t r = 0; r < rows; ++r) {
          for (int i = 0; i < 6; ++i) x[r * k + pos(rng)] = (i % 2 == 0) ? 127.0f : -127.0f;
        }
        const std::vector<float> want = run(pool, nullptr, x, rows, k, w.weight);
        for (const DotKernels* kernels : kernel_sets()) {
          const std::vector<float> got = run(pool, kernels, x, rows, k, w.weight);
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_EQ(got[i], want[i]) << dtype_name(type) << " " << kernels->name << " all_max=" << all_max
                                       << " k=" << k << " i=" << i;
          }
        }
      }
    }
  }
}

// Zero activations, zero weights, and blocks of one repeated value give exact answers.
TEST(CpuMatMul, ZerosAndEqualBlocks) {
  ThreadPool pool(2);
  std::mt19937 rng(7);
  const int64_t rows = 3, k = 512, n_out = 5;
  for (DType type : kAllTypes) {
    OwnedWeight w = quantized_weight(type, n_out, k, rng);
    OwnedWeight zero_w = make_weight(type, n_out, k, std::vector<std::byte>(w.bytes.size()));
    const std::vector<float> zeros(static_cast<size_t>(rows * k), 0.0f);
    // Every block of x holds one value, 127: quantizes exactly (d = 1, q = 127).
    const std::vector<float> equal(static_cast<size_t>(rows * k), 127.0f);
    for (const DotKernels* kernels : kernel_sets()) {
      for (float v : run(pool, kernels, zeros, rows, k, w.weight)) EXPECT_EQ(v, 0.0f);
      for (float v : run(pool, kernels, equal, rows, k, zero_w.weight)) EXPECT_EQ(v, 0.0f);
      const std::vector<float> got = run(pool, kernels, equal, rows, k, w.weight);
      const std::vector<float> want = run(pool, nullptr, equal, rows, k, w.weight);
      const std::vector<float> w_f32 = dequantized(w.weight);
      expect_close(got, want, equal, w_f32, rows, n_out, k,
                   std::string(dtype_name(type)) + " " + kernels->name + " equal blocks");
    }
  }
}

TEST(CpuMatMul, ErrorsAsValues) {
  ThreadPool pool(2);
  std::mt19937 rng(3);
  OwnedWeight w = quantized_weight(DType::Q4_K, 2, 256, rng);
  std::vector<float> x(512, 1.0f), out(4);
  const Status wrong_width = mat_mul_fast(pool, x.data(), 1, 512, w.weight, out.data());
  ASSERT_FALSE(wrong_width.ok());
  EXPECT_NE(wrong_width.error().message.find("wrong width"), std::string::npos);
  model::Weight odd = w.weight;
  odd.cols = 100;
  const Status bad_k = mat_mul_fast(pool, x.data(), 1, 100, odd, out.data());
  ASSERT_FALSE(bad_k.ok());
  EXPECT_NE(bad_k.error().message.find("k % 256 == 0, got 100"), std::string::npos) << bad_k.error().message;
}

// Q8_0 rows of an odd number of blocks: the AVX-512 kernels take blocks in pairs and the last
// one alone.
TEST(CpuMatMul, Q8_0OddBlockCounts) {
  ThreadPool pool(2);
  std::mt19937 rng(11);
  for (const Shape& shape : {Shape{1, 32, 9}, Shape{4, 96, 7}, Shape{5, 160, 17}, Shape{9, 224, 16}}) {
    OwnedWeight w = quantized_weight(DType::Q8_0, shape.n_out, shape.k, rng);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(shape.rows * shape.k));
    for (float& v : x) v = normal(rng);
    const std::vector<float> x_seen = activation_as_seen(DType::Q8_0, x, shape.rows, shape.k);
    const std::vector<float> want = run(pool, nullptr, x_seen, shape.rows, shape.k, w.weight);
    const std::vector<float> w_f32 = dequantized(w.weight);
    for (const DotKernels* kernels : kernel_sets()) {
      expect_close(run(pool, kernels, x, shape.rows, shape.k, w.weight), want, x_seen, w_f32, shape.rows, shape.n_out,
                   shape.k, std::string("Q8_0 k=") + std::to_string(shape.k) + " " + kernels->name);
    }
  }
}

// The AVX-512 sets run in every test above when the CPU has them; say so when it does not, so
// that a run on an AVX2-only machine shows what it left untested.
TEST(CpuMatMul, Avx512SetsCoveredOrSkipped) {
  const fast::CpuFeatures& f = fast::detected_cpu_features();
  const DotKernels* avx512 = fast::avx512_dot_kernels(f);
  const DotKernels* vnni = fast::avx512vnni_dot_kernels(f);
  if (avx512 == nullptr) {
    GTEST_SKIP() << "this CPU (or build) has no AVX-512 F/BW/VL: the avx512 and avx512vnni kernel sets are "
                    "not tested here";
  }
  for (const DotKernels* set : {avx512, vnni}) {
    if (set == nullptr) continue;
    EXPECT_NE(set->q4_k_rows, nullptr) << set->name;
    EXPECT_NE(set->packed.gemm_k, nullptr) << set->name;
    EXPECT_EQ(set->q8_0_tile, nullptr) << set->name;  // the AVX2 tile would not match its one-row kernel
  }
  if (vnni == nullptr) GTEST_SKIP() << "this CPU has AVX-512 but no AVX512_VNNI: the avx512vnni set is not tested here";
}

TEST(CpuMatMul, ReportsKernelSet) {
  const fast::CpuFeatures& f = fast::detected_cpu_features();
  std::printf("[ info ] cpu: avx2=%d avx512f=%d avx512bw=%d avx512vl=%d avx512vnni=%d; fast matmul uses %s\n", f.avx2,
              f.avx512f, f.avx512bw, f.avx512vl, f.avx512vnni, fast::best_dot_kernels(f).name);
  EXPECT_NE(fast::best_dot_kernels(f).q4_k, nullptr);
}

}  // namespace
}  // namespace gufo::cpu
