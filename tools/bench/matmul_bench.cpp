// Google Benchmark of the CPU matmul: the reference mat_mul (dequantize a weight row, scalar
// dot) against mat_mul_fast (SIMD dots, quantized activations) for every weight type, at the
// decode shape (1 x 4096 times 4096 x 4096) and prefill shapes (64 and 512 rows), on 2 threads.
// Usage: matmul_bench [--benchmark_filter=...]; reports GFLOP/s (2 * rows * k * n_out per call).
#include <benchmark/benchmark.h>
#include <cstdlib>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "core/dtype.h"
#include "quant/half.h"
#include "quant/quant.h"

namespace {

using gufo::DType;

// The shape: 4096 x 4096 unless GUFO_BENCH_K / GUFO_BENCH_N say otherwise (e.g. a model's
// output projection, 1024 x 151936, to see decode from memory rather than from L3).
const int64_t kK = std::getenv("GUFO_BENCH_K") ? std::atoll(std::getenv("GUFO_BENCH_K")) : 4096;
const int64_t kNOut = std::getenv("GUFO_BENCH_N") ? std::atoll(std::getenv("GUFO_BENCH_N")) : 4096;
constexpr int kThreads = 2;

struct BenchWeight {
  std::vector<std::byte> bytes;
  gufo::model::Weight weight;
};

// Float types: random normal values, converted. Block types: random quant bytes with every
// fp16 scale field set to a sane value (speed does not depend on the codes, and this avoids
// minutes of K-quant scale search over 16M weights).
BenchWeight make_weight(DType type) {
  const gufo::DTypeInfo info = gufo::dtype_info(type);
  const size_t row_bytes = gufo::dtype_row_bytes(info, kK);
  BenchWeight w;
  w.bytes.resize(row_bytes * kNOut);
  std::mt19937 rng(42);
  if (type == DType::F32 || type == DType::F16 || type == DType::BF16) {
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> row(kK);
    for (int64_t n = 0; n < kNOut; ++n) {
      for (float& v : row) v = normal(rng);
      (void)gufo::quant::quantize_row(type, row.data(), kK, w.bytes.data() + n * row_bytes, row_bytes);
    }
  } else {
    std::uniform_int_distribution<int> byte_dist(0, 255);
    for (std::byte& b : w.bytes) b = static_cast<std::byte>(byte_dist(rng));
    const uint16_t scale = gufo::quant::fp32_to_fp16(0.01f);
    for (size_t off = 0; off < w.bytes.size(); off += info.block_bytes) {
      std::byte* block = w.bytes.data() + off;
      if (type == DType::Q6_K) {
        std::memcpy(block + 208, &scale, 2);
      } else {
        std::memcpy(block, &scale, 2);
        if (type != DType::Q8_0) std::memcpy(block + 2, &scale, 2);
      }
    }
  }
  w.weight.name = "bench";
  w.weight.type = type;
  w.weight.rows = kNOut;
  w.weight.cols = kK;
  w.weight.row_bytes = row_bytes;
  w.weight.data = w.bytes.data();
  return w;
}

void bench_mat_mul(benchmark::State& state, DType type, bool fast) {
  const int64_t rows = state.range(0);
  static gufo::cpu::ThreadPool pool(kThreads);
  const BenchWeight w = make_weight(type);
  std::vector<float> x(static_cast<size_t>(rows * kK));
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float& v : x) v = normal(rng);
  std::vector<float> out(static_cast<size_t>(rows * kNOut));
  for (auto _ : state) {
    const gufo::Status s = fast ? gufo::cpu::mat_mul_fast(pool, x.data(), rows, kK, w.weight, out.data())
                                : gufo::cpu::mat_mul(pool, x.data(), rows, kK, w.weight, out.data());
    if (!s.ok()) {
      state.SkipWithError(s.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * static_cast<double>(rows * kK * kNOut) * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

const int registered = [] {
  for (DType type : {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    for (bool fast : {false, true}) {
      const std::string name = std::string(fast ? "fast/" : "reference/") + std::string(gufo::dtype_name(type));
      benchmark::RegisterBenchmark(name.c_str(), bench_mat_mul, type, fast)
          ->Arg(1)
          ->Arg(8)
          ->Arg(16)
          ->Arg(32)
          ->Arg(64)
          ->Arg(512)
          ->ArgName("rows")
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(0.3);
    }
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
