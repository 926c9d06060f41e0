// mat_mul on CUDA against the CPU: the quantized types (Q8_0, Q4_K, Q5_K, Q6_K) must give
// the CPU scalar kernels' bits exactly (the shared accumulation order, quant_traits.cuh),
// for every tiling (1..8 rows, 9..32, more) and in expert mode; F32/F16/BF16 within NMSE
// 1e-10 (fp32 sums in another order: error ~ k * 2^-24 relative per element, far below).
#include <gtest/gtest.h>

#include <memory>
#include <numeric>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/quant/dot_kernels.h"
#include "backend/cpu/thread_pool.h"
#include "backend/cuda/device_weights.h"
#include "backend/cuda/ops/mat_vec_q.cuh"
#include "backend/cuda/ops/ops.h"
#include "tests/ops/ops_harness.h"

namespace gufo::ops_test {
namespace {

constexpr DType kQuantTypes[] = {DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
constexpr DType kFloatTypes[] = {DType::F32, DType::F16, DType::BF16};

// The CPU's product with the scalar kernel set (every set gives its bits, cpu_matmul_test).
std::vector<float> cpu_product(cpu::ThreadPool& pool, const model::Weight& w, const std::vector<float>& x, int64_t m) {
  std::vector<float> out(static_cast<size_t>(m * w.rows));
  const Status s = cpu::mat_mul_fast(pool, cpu::fast::scalar_dot_kernels(), x.data(), m, w.cols, w, out.data());
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out;
}

// Activation rows routed to experts, as the MoE's routing lays them out (ops.h, ExpertRows):
// expert e takes output rows offsets[e]..offsets[e+1], whose activations are x rows x_rows[j].
struct HostExperts {
  std::vector<int32_t> offsets;
  std::vector<int32_t> x_rows;
  int64_t max_rows = 0;
  std::vector<int32_t> active;  // empty: a block per expert (ExpertRows::active)
};

// Which launcher runs: mat_mul_q / mat_mul_float as the backend calls them, or mat_vec_q alone.
enum class Path { MatMul, MatVec };

// The GPU's product of x [m, w.cols] with w (every output row; with `experts`, in expert mode).
std::vector<float> gpu_product(const model::Weight& w, const std::vector<float>& x, int64_t m,
                               const HostExperts* experts = nullptr, Path path = Path::MatMul) {
  cuda::DeviceWeights weights;
  const Status up = weights.upload_matrix(w, nullptr);
  EXPECT_TRUE(up.ok()) << up.error().message;
  const cuda::WeightView& view = *weights.matrix(&w);
  const int64_t out_rows = experts != nullptr ? experts->offsets.back() : m;
  DeviceBuffer<float> dx(x), out(static_cast<size_t>(out_rows * w.rows));
  DeviceBuffer<int32_t> d_offsets(experts != nullptr ? experts->offsets : std::vector<int32_t>{});
  DeviceBuffer<int32_t> d_rows(experts != nullptr ? experts->x_rows : std::vector<int32_t>{});
  DeviceBuffer<int32_t> d_active(experts != nullptr ? experts->active : std::vector<int32_t>{});
  cuda::ExpertRows routing;
  if (experts != nullptr) {
    routing = {.offsets = d_offsets.get(),
               .x_rows = d_rows.get(),
               .n_expert = static_cast<int64_t>(experts->offsets.size()) - 1,
               .max_rows = experts->max_rows};
    if (!experts->active.empty()) {
      routing.active = d_active.get();
      routing.grid_experts = static_cast<int64_t>(experts->active.size());
    }
  }
  const cuda::ExpertRows* by_expert = experts != nullptr ? &routing : nullptr;
  Status s;
  if (!cuda::is_quantized_matmul_type(w.type)) {
    s = cuda::mat_mul_float(view, dx.get(), m, w.cols, out.get(), w.rows, by_expert, nullptr);
  } else {
    const bool q8k = cuda::wants_q8k(w.type);
    DeviceBuffer<std::byte> scratch(cuda::quant_acts_bytes(m, w.cols, q8k));
    const cuda::QuantActs acts = cuda::quant_acts_at(scratch.get(), m, w.cols, q8k);
    EXPECT_TRUE(cuda::quantize_acts(dx.get(), w.cols, acts, nullptr).ok());
    s = path == Path::MatVec ? cuda::mat_vec_q({view, acts, out.get(), w.rows, routing}, nullptr)
                             : cuda::mat_mul_q(view, acts, out.get(), w.rows, by_expert, nullptr);
  }
  EXPECT_TRUE(s.ok()) << s.error().message;
  return out.download();
}

struct Shape {
  int64_t m, n, k;
};

// What expert mode must give: expert e's product over the activation rows x_rows[offsets[e]..
// offsets[e+1]), each expert's rows in order, on the CPU.
std::vector<float> cpu_expert_products(cpu::ThreadPool& pool, const model::Weight& stack, const std::vector<float>& x,
                                       const std::vector<int32_t>& offsets, const std::vector<int32_t>& x_rows) {
  const int64_t k = stack.cols;
  std::vector<float> want;
  for (int64_t e = 0; e + 1 < static_cast<int64_t>(offsets.size()); ++e) {
    std::vector<float> xe;
    for (int32_t j = offsets[e]; j < offsets[e + 1]; ++j) {
      xe.insert(xe.end(), x.begin() + x_rows[j] * k, x.begin() + (x_rows[j] + 1) * k);
    }
    const std::vector<float> part = cpu_product(pool, model::expert(stack, e), xe, offsets[e + 1] - offsets[e]);
    want.insert(want.end(), part.begin(), part.end());
  }
  return want;
}

TEST(CudaMatMul, QuantizedTypesGiveTheCpuBitsInEveryTiling) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(7);
  int cases = 0;
  // m covers each tiling and its edges (8 | 9, 32 | 33), n odd and past a tile, k several blocks;
  // the decode matmul's two-round sets (one or two rows, k >= 4096 for the K-quants) whole
  // and with a partial last set (k = 6400: 25 super-blocks).
  const Shape shapes[] = {{1, 16, 256},    {1, 4096, 1024}, {2, 17, 512},    {7, 33, 256},
                          {8, 64, 768},    {9, 100, 256},   {31, 48, 512},   {32, 1, 256},
                          {33, 65, 256},   {64, 128, 512},  {100, 77, 1024}, {256, 256, 256},
                          {5, 1000, 2048}, {1, 40, 4096},   {2, 24, 6400},   {1, 9, 12288}};
  for (DType type : kQuantTypes) {
    for (const Shape& s : shapes) {
      SCOPED_TRACE(std::string(dtype_name(type)) + " m=" + std::to_string(s.m) + " n=" + std::to_string(s.n) +
                   " k=" + std::to_string(s.k));
      const HostWeight w = random_weight(type, s.n, s.k, rng);
      const std::vector<float> x = random_floats(static_cast<size_t>(s.m * s.k), rng);
      const Difference d = compare(gpu_product(w.weight, x, s.m), cpu_product(pool, w.weight, x, s.m));
      EXPECT_EQ(d.mismatches, 0u) << "max |diff| " << d.max_abs;
      ++cases;
    }
  }
  // Q8_0 rows of an odd number of 32-blocks.
  for (int64_t k : {32, 96, 800}) {
    const HostWeight w = random_weight(DType::Q8_0, 40, k, rng);
    const std::vector<float> x = random_floats(static_cast<size_t>(3 * k), rng);
    EXPECT_EQ(compare(gpu_product(w.weight, x, 3), cpu_product(pool, w.weight, x, 3)).mismatches, 0u) << "k=" << k;
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaMatMul, ARowGivesTheSameBitsInAnyBatch) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(11);
  int cases = 0;
  for (DType type : kQuantTypes) {
    const HostWeight w = random_weight(type, 96, 512, rng);
    const std::vector<float> x = random_floats(static_cast<size_t>(300 * 512), rng);
    const std::vector<float> all = gpu_product(w.weight, x, 300);
    for (int64_t m : {1, 5, 8, 20, 32, 64}) {
      const std::vector<float> head(x.begin(), x.begin() + m * 512);
      const std::vector<float> part = gpu_product(w.weight, head, m);
      EXPECT_EQ(compare(part, std::vector<float>(all.begin(), all.begin() + m * 96)).mismatches, 0u)
          << dtype_name(type) << " m=" << m;
      ++cases;
    }
  }
  // (41 rows: the batch of 50 takes four weight rows a block, the last block mostly past the end;
  // 1,100 rows: a warp a row.)
  for (DType type : kFloatTypes) {
    for (const int64_t n : {41, 1100}) {
      const HostWeight w = random_weight(type, n, 300, rng);
      const std::vector<float> x = random_floats(static_cast<size_t>(50 * 300), rng);
      const std::vector<float> all = gpu_product(w.weight, x, 50);
      const std::vector<float> one = gpu_product(w.weight, std::vector<float>(x.begin(), x.begin() + 300), 1);
      EXPECT_EQ(compare(one, std::vector<float>(all.begin(), all.begin() + n)).mismatches, 0u)
          << dtype_name(type) << " n=" << n;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaMatMul, FloatTypesMatchTheCpu) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(3);
  int cases = 0;
  // Under 1,024 rows a weight row takes four warps (the MoE router: 128 x 2048), one or four
  // rows a block by the batch; from 1,024 rows, a warp.
  const Shape shapes[] = {{1, 16, 64},    {3, 17, 100},    {9, 64, 769},   {64, 33, 512},  {1, 512, 4096},
                          {1, 128, 2048}, {20, 127, 2048}, {1, 1030, 300}, {11, 1024, 96}, {2, 1023, 3000}};
  for (DType type : kFloatTypes) {
    for (const Shape& s : shapes) {
      const HostWeight w = random_weight(type, s.n, s.k, rng);
      const std::vector<float> x = random_floats(static_cast<size_t>(s.m * s.k), rng);
      // NOTE(mat_mul_test): fp32 sums of k terms in two orders differ by ~sqrt(k) * 2^-24
      // relative; NMSE 1e-10 is far above that and far below any indexing mistake.
      EXPECT_LT(nmse(gpu_product(w.weight, x, s.m), cpu_product(pool, w.weight, x, s.m)), 1e-10)
          << dtype_name(type) << " m=" << s.m << " n=" << s.n << " k=" << s.k;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

// Expert mode: rows grouped by expert (offsets), activations picked through x_rows.
TEST(CudaMatMul, ExpertModeGivesEachExpertsProduct) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(5);
  int cases = 0;
  // 13 tokens: each expert's rows fit the small-batch tiles; 100: some take the prefill tiles.
  for (const int64_t tokens : {13, 100}) {
    for (DType type : {DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::F32, DType::F16}) {
      const int64_t n_expert = 6, n = 48, k = 512;
      const HostWeight w = random_weight(type, n, k, rng, n_expert);
      const std::vector<float> x = random_floats(static_cast<size_t>(tokens * k), rng);
      // Expert e takes tokens with (token + e) % 3 == 0, ascending; expert 4 takes none.
      std::vector<int32_t> offsets = {0}, x_rows;
      for (int64_t e = 0; e < n_expert; ++e) {
        for (int64_t t = 0; t < tokens; ++t) {
          if (e != 4 && (t + e) % 3 == 0) x_rows.push_back(static_cast<int32_t>(t));
        }
        offsets.push_back(static_cast<int32_t>(x_rows.size()));
      }
      const std::vector<float> want = cpu_expert_products(pool, w.weight, x, offsets, x_rows);
      // Blocks for every expert, then only for those with rows (and one idle block, -1).
      std::vector<int32_t> active;
      for (int32_t e = 0; e < n_expert; ++e) {
        if (offsets[e + 1] > offsets[e]) active.push_back(e);
      }
      active.push_back(-1);
      for (const auto& grid : {std::vector<int32_t>{}, active}) {
        const HostExperts experts{.offsets = offsets, .x_rows = x_rows, .max_rows = tokens, .active = grid};
        const std::vector<float> got = gpu_product(w.weight, x, tokens, &experts);
        if (cuda::is_quantized_matmul_type(type)) {
          EXPECT_EQ(compare(got, want).mismatches, 0u) << dtype_name(type) << " active " << grid.size();
        } else {
          EXPECT_LT(nmse(got, want), 1e-10) << dtype_name(type) << " active " << grid.size();
        }
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaMatMul, RefusesActivationsOfTheWrongFormat) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(1);
  const HostWeight w = random_weight(DType::Q4_K, 16, 256, rng);
  cuda::DeviceWeights weights;
  ASSERT_TRUE(weights.upload_matrix(w.weight, nullptr).ok());
  DeviceBuffer<std::byte> scratch(cuda::quant_acts_bytes(1, 256, false));
  const cuda::QuantActs q8_0 = cuda::quant_acts_at(scratch.get(), 1, 256, false);
  DeviceBuffer<float> out(16);
  const Status s = cuda::mat_mul_q(*weights.matrix(&w.weight), q8_0, out.get(), 16, nullptr, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("do not fit"), std::string::npos) << s.error().message;
}

// mat_mul_q_parts (q, k and v; gate and up in one launch): each weight's product has the CPU's
// bits, in one launch (up to 8 rows, one type) and in the fallback (9 rows, mixed types).
TEST(CudaMatMul, PartsGiveEachWeightsCpuBits) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(23);
  int cases = 0;
  const auto check = [&](const std::vector<DType>& types, int64_t k, int64_t m,
                         const std::vector<int64_t>& rows = {40, 8, 17}) {
    std::vector<HostWeight> host;
    for (size_t i = 0; i < types.size(); ++i) host.push_back(random_weight(types[i], rows[i], k, rng));
    const std::vector<float> x = random_floats(static_cast<size_t>(m * k), rng);
    cuda::DeviceWeights weights;
    std::vector<std::unique_ptr<DeviceBuffer<float>>> outs;
    std::vector<cuda::MatMulPart> parts;
    for (const HostWeight& w : host) {
      ASSERT_TRUE(weights.upload_matrix(w.weight, nullptr).ok());
      outs.push_back(std::make_unique<DeviceBuffer<float>>(static_cast<size_t>(m * w.weight.rows)));
    }
    for (size_t i = 0; i < host.size(); ++i) {
      parts.push_back({weights.matrix(&host[i].weight), outs[i]->get(), host[i].weight.rows});
    }
    const bool q8k = cuda::wants_q8k(types[0]);
    DeviceBuffer<float> dx(x);
    DeviceBuffer<std::byte> scratch(cuda::quant_acts_bytes(m, k, q8k));
    const cuda::QuantActs acts = cuda::quant_acts_at(scratch.get(), m, k, q8k);
    ASSERT_TRUE(cuda::quantize_acts(dx.get(), k, acts, nullptr).ok());
    const Status s = cuda::mat_mul_q_parts(parts.data(), static_cast<int>(parts.size()), acts, nullptr, nullptr);
    ASSERT_TRUE(s.ok()) << s.error().message;
    for (size_t i = 0; i < host.size(); ++i) {
      EXPECT_EQ(compare(outs[i]->download(), cpu_product(pool, host[i].weight, x, m)).mismatches, 0u)
          << dtype_name(types[i]) << " part " << i << " k=" << k << " m=" << m;
      ++cases;
    }
  };
  for (DType type : kQuantTypes) {
    for (int64_t k : {768, 4096}) {
      for (int64_t m : {1, 2, 5, 9}) check({type, type, type}, k, m);
    }
    check({type, type}, 1024, 1);
  }
  check({DType::Q4_K, DType::Q4_K, DType::Q6_K}, 512, 1);  // v of another type: one launch each
  // A decode step's q, k and v (split rows, two a block), and parts at four rows a warp (Q6_K
  // of one round) and split (Q8_0); all but the first end inside a block's rows.
  check({DType::Q4_K, DType::Q4_K, DType::Q4_K}, 4096, 1, {4096, 1024, 1024});
  check({DType::Q4_K, DType::Q4_K, DType::Q4_K}, 4096, 1, {4097, 1023, 1025});
  check({DType::Q6_K, DType::Q6_K}, 1024, 1, {4099, 4101});
  check({DType::Q8_0, DType::Q8_0}, 1024, 1, {8197, 8203});
  EXPECT_GT(cases, 0);
}

// A MoE's gate and up stacks in one expert-mode launch: each expert's product, as mat_mul_q's.
TEST(CudaMatMul, ExpertPartsGiveEachExpertsProduct) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(29);
  int cases = 0;
  for (DType type : kQuantTypes) {
    const int64_t n = 40, k = 512, n_expert = 3;
    const HostWeight gate = random_weight(type, n, k, rng, n_expert);
    const HostWeight up = random_weight(type, n, k, rng, n_expert);
    const std::vector<float> x = random_floats(static_cast<size_t>(3 * k), rng);
    const std::vector<int32_t> offsets = {0, 2, 2, 5}, x_rows = {0, 2, 0, 1, 2};
    cuda::DeviceWeights weights;
    ASSERT_TRUE(weights.upload_matrix(gate.weight, nullptr).ok());
    ASSERT_TRUE(weights.upload_matrix(up.weight, nullptr).ok());
    DeviceBuffer<int32_t> d_offsets(offsets), d_rows(x_rows);
    const cuda::ExpertRows routing{
        .offsets = d_offsets.get(), .x_rows = d_rows.get(), .n_expert = n_expert, .max_rows = 3};
    const bool q8k = cuda::wants_q8k(type);
    DeviceBuffer<float> dx(x), gate_out(static_cast<size_t>(5 * n)), up_out(static_cast<size_t>(5 * n));
    DeviceBuffer<std::byte> scratch(cuda::quant_acts_bytes(3, k, q8k));
    const cuda::QuantActs acts = cuda::quant_acts_at(scratch.get(), 3, k, q8k);
    ASSERT_TRUE(cuda::quantize_acts(dx.get(), k, acts, nullptr).ok());
    const cuda::MatMulPart parts[] = {{weights.matrix(&gate.weight), gate_out.get(), n},
                                      {weights.matrix(&up.weight), up_out.get(), n}};
    const Status s = cuda::mat_mul_q_parts(parts, 2, acts, &routing, nullptr);
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(compare(gate_out.download(), cpu_expert_products(pool, gate.weight, x, offsets, x_rows)).mismatches, 0u)
        << dtype_name(type) << " gate";
    EXPECT_EQ(compare(up_out.download(), cpu_expert_products(pool, up.weight, x, offsets, x_rows)).mismatches, 0u)
        << dtype_name(type) << " up";
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

// One activation row over thousands of weight rows (a decode step's matmuls): mat_vec_q.cu
// splits the rows of launches of 2,048 to 65,535 rows and more than one round between a
// block's warps, and otherwise gives a warp several weight rows (2 from 2048 rows, 4 from
// 8192, 8 from 16384), keeping the activations across them a chunk of one or two rounds at a
// time. Rows past the last whole share, rounds cut short (k = 6400: 25 super-blocks) and a
// round wider than the row (k = 256) give the CPU's bits too.
TEST(CudaMatVec, OneRowOverManyWeightRowsGivesTheCpuBits) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(31);
  int cases = 0;
  const auto check = [&](DType type, int64_t n, int64_t k) {
    const HostWeight w = random_weight(type, n, k, rng, 1, 0.05f, /*distinct_rows=*/4099);
    const std::vector<float> x = random_floats(static_cast<size_t>(k), rng);
    EXPECT_EQ(compare(gpu_product(w.weight, x, 1, nullptr, Path::MatVec), cpu_product(pool, w.weight, x, 1)).mismatches,
              0u)
        << dtype_name(type) << " n=" << n << " k=" << k;
    ++cases;
  };
  for (DType type : kQuantTypes) {
    for (const Shape& s : {Shape{1, 2053, 6400}, Shape{1, 2048, 256}, Shape{1, 8195, 2048}, Shape{1, 16389, 1024}}) {
      check(type, s.n, s.k);
    }
  }
  // Split rows: two rounds of 8 super-blocks, and two whole ones and a short one (17
  // super-blocks) over three warps; Q8_0 over four warps and five rounds, the last short; a
  // down projection's seven rounds (49 super-blocks), two for most of the four warps.
  check(DType::Q4_K, 16384, 4096);
  for (DType type : {DType::Q4_K, DType::Q6_K}) check(type, 8195, 4352);
  check(DType::Q4_K, 16385, 4352);
  check(DType::Q8_0, 16389, 2080);
  check(DType::Q6_K, 2049, 12544);
  // Eight rows a warp, as a large vocabulary's output matvec runs: a chunk of two rounds and a
  // short one (17 super-blocks; Q8_0: 33 of 32 elements); a chunk of one round and a short one (9).
  check(DType::Q6_K, 65539, 4352);
  check(DType::Q8_0, 65539, 1056);
  check(DType::Q4_K, 65539, 2304);
  EXPECT_GT(cases, 0);
}

// The small-batch kernel (mat_vec_q.cu) on its own, plain and in expert mode, against the CPU
// bit for bit (mat_mul_q routes batches of up to 8 rows to it).
// Rows shorter than a round sit side by side in a warp: the K-quants at k = 256, 512 and 768
// (8, 4 and 2 rows a warp), Q8_0 at k = 256 (2); 77 and 43 rows end inside a warp.
TEST(CudaMatVec, GivesTheCpuBitsForUpToEightRows) {
  GUFO_REQUIRE_GPU();
  cpu::ThreadPool pool(4);
  std::mt19937 rng(17);
  int cases = 0;
  for (DType type : kQuantTypes) {
    for (int64_t k : {256, 768, 2048, 4096, 12288}) {
      for (int64_t m : {1, 2, 3, 6, 8}) {
        const int64_t n = 77;
        const HostWeight w = random_weight(type, n, k, rng);
        const std::vector<float> x = random_floats(static_cast<size_t>(m * k), rng);
        EXPECT_EQ(
            compare(gpu_product(w.weight, x, m, nullptr, Path::MatVec), cpu_product(pool, w.weight, x, m)).mismatches,
            0u)
            << dtype_name(type) << " k=" << k << " m=" << m;
        ++cases;
      }
    }
  }
  // Expert mode: 3 tokens routed to experts 0 and 2 of a stack of 3, rows of 512 (a K-quant
  // warp packs 4), 768 (2, as a Qwen3-30B-A3B expert's down projection) and 256 (Q8_0 packs 2).
  for (DType type : kQuantTypes) {
    for (const int64_t k : {512, 768, 256}) {
      const int64_t n = 43;
      const HostWeight w = random_weight(type, n, k, rng, 3);
      const std::vector<float> x = random_floats(static_cast<size_t>(3 * k), rng);
      const std::vector<int32_t> offsets = {0, 2, 2, 5}, x_rows = {0, 2, 0, 1, 2};
      const HostExperts experts{.offsets = offsets, .x_rows = x_rows, .max_rows = 3, .active = {}};
      EXPECT_EQ(compare(gpu_product(w.weight, x, 3, &experts, Path::MatVec),
                        cpu_expert_products(pool, w.weight, x, offsets, x_rows))
                    .mismatches,
                0u)
          << dtype_name(type) << " experts k=" << k;
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace gufo::ops_test
