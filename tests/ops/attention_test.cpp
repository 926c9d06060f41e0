// kv_store and attention on CUDA against the CPU (backend/cpu/ops/attention.cpp) over the head
// layouts of the four architectures, f16 and f32 caches, paged block tables with a shared
// prefix, positions across several splits, and padding rows; and a row's output alone (one
// block per split, merged by the last) against the same row in a long batch (one block per
// row): the same bits; and the split tickets left zero for the next call.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>
#include <string>

#include "backend/backend.h"
#include "backend/cpu/ops/ops.h"
#include "backend/cuda/ops/ops.h"
#include "quant/half.h"
#include "tests/ops/ops_harness.h"

namespace gufo::ops_test {
namespace {

constexpr int32_t kBlockShift = 4;  // 16 positions per block
constexpr int64_t kBlock = 1 << kBlockShift;

// A paged cache of two sequences on both sides: sequence 1 shares sequence 0's first blocks.
struct Cache {
  int64_t n_embd_kv = 0;
  bool f16 = true;
  int64_t n_ctx = 0;
  int64_t table_stride = 0;
  std::vector<int32_t> tables;  // [2, table_stride]
  std::vector<std::byte> k, v;  // host pools
  std::unique_ptr<DeviceBuffer<std::byte>> dk, dv;
  std::unique_ptr<DeviceBuffer<int32_t>> dtables;

  cpu::KvView host_view(int32_t seq) {
    return {.type = f16 ? DType::F16 : DType::F32,
            .k = k.data(),
            .v = v.data(),
            .n_embd_kv = n_embd_kv,
            .blocks = tables.data() + seq * table_stride,
            .block_shift = kBlockShift};
  }
  cuda::KvLayer device_layer() const {
    return {.k = dk->get(),
            .v = dv->get(),
            .f16 = f16,
            .n_embd_kv = n_embd_kv,
            .block_shift = kBlockShift,
            .tables = dtables->get(),
            .table_stride = table_stride};
  }
};

Cache make_cache(int64_t n_embd_kv, bool f16, int64_t n_ctx, std::mt19937& rng) {
  Cache c;
  c.n_embd_kv = n_embd_kv;
  c.f16 = f16;
  c.n_ctx = n_ctx;
  c.table_stride = (n_ctx + kBlock - 1) / kBlock;
  const int64_t shared = c.table_stride / 2;
  const int64_t n_blocks = 2 * c.table_stride - shared;
  std::vector<int32_t> order(static_cast<size_t>(n_blocks));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  c.tables.assign(order.begin(), order.begin() + c.table_stride);
  c.tables.insert(c.tables.end(), order.begin(), order.begin() + shared);
  c.tables.insert(c.tables.end(), order.begin() + c.table_stride, order.end());
  const size_t elem = f16 ? 2 : 4;
  const size_t n = static_cast<size_t>(n_blocks * kBlock * n_embd_kv);
  c.k.resize(n * elem);
  c.v.resize(n * elem);
  const std::vector<float> kv = random_floats(2 * n, rng);
  for (size_t i = 0; i < n; ++i) {
    if (f16) {
      reinterpret_cast<uint16_t*>(c.k.data())[i] = quant::fp32_to_fp16(kv[i]);
      reinterpret_cast<uint16_t*>(c.v.data())[i] = quant::fp32_to_fp16(kv[n + i]);
    } else {
      reinterpret_cast<float*>(c.k.data())[i] = kv[i];
      reinterpret_cast<float*>(c.v.data())[i] = kv[n + i];
    }
  }
  c.dk = std::make_unique<DeviceBuffer<std::byte>>(c.k);
  c.dv = std::make_unique<DeviceBuffer<std::byte>>(c.v);
  c.dtables = std::make_unique<DeviceBuffer<int32_t>>(c.tables);
  return c;
}

struct Rows {
  std::vector<int32_t> seq_ids, positions;
};

std::vector<float> gpu_attention(Cache& cache, const Rows& rows, const cuda::AttentionShape& shape,
                                 const std::vector<float>& q) {
  const auto n = static_cast<int64_t>(rows.seq_ids.size());
  DeviceBuffer<int32_t> seqs(rows.seq_ids), positions(rows.positions);
  const auto max_position = static_cast<int32_t>(cache.n_ctx - 1);
  const cuda::BatchRows batch{.positions = positions.get(), .seq_ids = seqs.get(), .n_rows = n};
  const int64_t width = shape.n_head * shape.head_dim;
  const auto tickets_of = [&] {
    return std::make_unique<DeviceBuffer<int32_t>>(
        std::vector<int32_t>(static_cast<size_t>(cuda::attention_tickets(shape)), 0));
  };
  // One call on `tickets` (a new output buffer: NaN bytes, so an element never written shows).
  const auto call = [&](const std::vector<float>& q_values, DeviceBuffer<int32_t>& tickets) {
    DeviceBuffer<float> dq(q_values), out(q_values.size());
    DeviceBuffer<std::byte> scratch(std::max<size_t>(cuda::attention_scratch_bytes(shape, n, max_position), 1));
    const Status s = cuda::attention(cache.device_layer(), batch, shape, dq.get(), width, max_position, scratch.get(),
                                     tickets.get(), out.get(), width, nullptr);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return out.download();
  };
  // The tickets a call leaves are zero, and a second call on them (other q, so that partials
  // of the first cannot pass for its own) gives the bits of a call on fresh tickets.
  auto used = tickets_of();
  const std::vector<float> first = call(q, *used);
  const std::vector<int32_t> left = used->download();
  EXPECT_EQ(std::count(left.begin(), left.end(), 0), static_cast<std::ptrdiff_t>(left.size())) << "tickets left set";
  std::vector<float> q2(q);
  for (float& v : q2) v = -0.5f * v;
  auto fresh = tickets_of();
  EXPECT_EQ(compare(call(q2, *used), call(q2, *fresh)).mismatches, 0u) << "a second call on used tickets differs";
  return first;
}

struct Layout {
  int64_t n_head, n_head_kv, head_dim;
};

cuda::AttentionShape shape_of(const Layout& l) {
  return {.n_head = l.n_head,
          .n_head_kv = l.n_head_kv,
          .head_dim = l.head_dim,
          .scale = 1.0f / std::sqrt(static_cast<float>(l.head_dim))};
}

// The CPU's attention (backend/cpu/ops/attention.cpp, attend) of every row; padding rows 0.
std::vector<float> cpu_attention(Cache& cache, const Rows& rows, const cuda::AttentionShape& shape,
                                 const std::vector<float>& q) {
  const int64_t width = shape.n_head * shape.head_dim;
  std::vector<float> want(rows.seq_ids.size() * static_cast<size_t>(width), 0.0f);
  for (size_t r = 0; r < rows.seq_ids.size(); ++r) {
    if (rows.seq_ids[r] == backend::kPaddingSeq) continue;
    std::vector<float> scratch(static_cast<size_t>(shape.n_head * (rows.positions[r] + 1)));
    cpu::attend(cache.host_view(rows.seq_ids[r]), {shape.n_head, shape.n_head_kv, shape.head_dim, shape.scale},
                q.data() + r * width, rows.positions[r], scratch.data(), want.data() + r * width);
  }
  return want;
}

std::string layout_name(const cuda::AttentionShape& shape) {
  return "layout " + std::to_string(shape.n_head) + "/" + std::to_string(shape.n_head_kv) + "x" +
         std::to_string(shape.head_dim);
}

// The GPU's attention of `rows` for random q (left in `q`), checked against the CPU's: every
// output written (no NaN) and within the bound of the NOTE below.
std::vector<float> expect_cpu_outputs(Cache& cache, const Rows& rows, const cuda::AttentionShape& shape,
                                      std::mt19937& rng, std::vector<float>& q, const std::string& what) {
  q = random_floats(rows.seq_ids.size() * static_cast<size_t>(shape.n_head * shape.head_dim), rng);
  const std::vector<float> got = gpu_attention(cache, rows, shape, q);
  // NOTE(attention_test): softmax-weighted sums of up to 1100 values in another order
  // (tiles, splits, expf): differences of a few 1e-7 on outputs of order 1.
  const Difference d = compare(got, cpu_attention(cache, rows, shape, q), 1.0);
  EXPECT_LT(d.max_abs, 2e-5) << what;
  EXPECT_FALSE(d.nan) << what << ": an output was never written";
  return got;
}

// Row r of `batch` alone (a decode step: split blocks) gives the bits it has in `all`.
void expect_alone_as_in_batch(Cache& cache, const Rows& batch, const cuda::AttentionShape& shape,
                              const std::vector<float>& q, const std::vector<float>& all, size_t r,
                              const std::string& what) {
  const auto width = static_cast<size_t>(shape.n_head * shape.head_dim);
  const Rows one{{batch.seq_ids[r]}, {batch.positions[r]}};
  const std::vector<float> q_one(q.begin() + r * width, q.begin() + (r + 1) * width);
  const std::vector<float> alone = gpu_attention(cache, one, shape, q_one);
  EXPECT_EQ(compare(alone, std::vector<float>(all.begin() + r * width, all.begin() + (r + 1) * width)).mismatches, 0u)
      << what << " row " << r << " at position " << batch.positions[r];
}

TEST(CudaAttention, MatchesTheCpuOverLayoutsCachesAndPositions) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(9);
  int cases = 0;
  // tiny-llama, tiny-qwen3, Qwen3-0.6B/8B, Qwen3-1.7B, Llama-3-8B, Qwen3-30B-A3B, MHA
  const Layout layouts[] = {{4, 2, 16}, {4, 2, 32}, {16, 8, 128}, {32, 8, 128}, {32, 4, 128}, {8, 8, 64}, {14, 2, 64}};
  for (const Layout& l : layouts) {
    for (bool f16 : {true, false}) {
      const int64_t n_ctx = 1100;
      Cache cache = make_cache(l.n_head_kv * l.head_dim, f16, n_ctx, rng);
      Rows rows;
      for (int32_t p : {0, 1, 15, 16, 255, 256, 257, 700, 1099}) {
        rows.seq_ids.push_back(static_cast<int32_t>(rows.seq_ids.size() % 2));
        rows.positions.push_back(p);
      }
      rows.seq_ids.push_back(backend::kPaddingSeq);
      rows.positions.push_back(0);
      const cuda::AttentionShape shape = shape_of(l);
      std::vector<float> q;
      expect_cpu_outputs(cache, rows, shape, rng, q, layout_name(shape) + " f16=" + std::to_string(f16));
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

// A short chunk (split blocks, one per split): padding first, then one sequence's run across
// a split boundary (rows below 256 write their output directly, later ones merge by ticket,
// and the second split's blocks hold rows with no key in it), then a lone row of another.
TEST(CudaAttention, AShortChunkAcrossASplitMatchesTheCpu) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(14);
  int cases = 0;
  for (const Layout& l : {Layout{32, 8, 128}, Layout{16, 8, 128}, Layout{8, 8, 64}, Layout{4, 2, 32}}) {
    Cache cache = make_cache(l.n_head_kv * l.head_dim, true, 1100, rng);
    Rows rows;
    rows.seq_ids.push_back(backend::kPaddingSeq), rows.positions.push_back(0);
    for (int32_t p = 250; p < 263; ++p) rows.seq_ids.push_back(0), rows.positions.push_back(p);
    rows.seq_ids.push_back(1), rows.positions.push_back(700);
    const cuda::AttentionShape shape = shape_of(l);
    std::vector<float> q;
    expect_cpu_outputs(cache, rows, shape, rng, q, layout_name(shape));
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaAttention, ARowIsTheSameAloneAndInALongBatch) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(10);
  int cases = 0;
  // f16: the tensor-core kernel; f32: the scalar one. 80 rows: past the split-block bound, so
  // the batch walks its splits in blocks while a row alone gets a block per split.
  for (bool f16 : {true, false}) {
    const cuda::AttentionShape shape{.n_head = 32, .n_head_kv = 8, .head_dim = 128, .scale = 0.088f};
    Cache cache = make_cache(8 * 128, f16, 4096, rng);
    Rows batch;
    for (int32_t i = 0; i < 80; ++i) {
      batch.seq_ids.push_back(i % 2);
      batch.positions.push_back(50 * i + 3);
    }
    const int64_t width = 32 * 128;
    const std::vector<float> q = random_floats(batch.seq_ids.size() * static_cast<size_t>(width), rng);
    const std::vector<float> all = gpu_attention(cache, batch, shape, q);
    for (size_t r : {0, 7, 20, 39, 79}) {
      expect_alone_as_in_batch(cache, batch, shape, q, all, r, "f16=" + std::to_string(f16));
      ++cases;
    }
  }
  EXPECT_GT(cases, 0);
}

// A prefill-shaped batch: runs of one sequence at consecutive positions (blocks share their
// key tiles), another sequence, a padding row, a lone row; against the CPU, and a row alone
// (a decode step: split blocks) gives the bits it has inside the batch.
TEST(CudaAttention, PrefillRunsMatchTheCpuAndARowAlone) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(13);
  int cases = 0;
  for (const Layout& l : {Layout{32, 8, 128}, Layout{16, 8, 128}, Layout{32, 4, 128}, Layout{8, 8, 64}}) {
    Cache cache = make_cache(l.n_head_kv * l.head_dim, true, 1100, rng);
    Rows batch;
    for (int32_t p = 0; p < 150; ++p) batch.seq_ids.push_back(0), batch.positions.push_back(p);
    for (int32_t p = 500; p < 531; ++p) batch.seq_ids.push_back(1), batch.positions.push_back(p);
    batch.seq_ids.push_back(backend::kPaddingSeq), batch.positions.push_back(0);
    batch.seq_ids.push_back(0), batch.positions.push_back(1050);
    const cuda::AttentionShape shape = shape_of(l);
    std::vector<float> q;
    const std::vector<float> all = expect_cpu_outputs(cache, batch, shape, rng, q, layout_name(shape));
    for (size_t r : {0, 63, 64, 149, 150, 180, 182}) {
      expect_alone_as_in_batch(cache, batch, shape, q, all, r, layout_name(shape));
    }
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaAttention, KvStoreWritesTheCpuBytes) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(12);
  int cases = 0;
  for (bool f16 : {true, false}) {
    Cache cache = make_cache(64, f16, 64, rng);
    Rows rows{{0, 1, backend::kPaddingSeq, 1}, {3, 40, 0, 63}};
    const std::vector<float> k = random_floats(4 * 64, rng), v = random_floats(4 * 64, rng);
    for (size_t r = 0; r < 4; ++r) {
      if (rows.seq_ids[r] == backend::kPaddingSeq) continue;
      cpu::kv_store(cache.host_view(rows.seq_ids[r]), rows.positions[r], k.data() + r * 64, v.data() + r * 64);
    }
    DeviceBuffer<int32_t> seqs(rows.seq_ids), positions(rows.positions);
    DeviceBuffer<float> dk(k), dv(v);
    const cuda::BatchRows batch{.positions = positions.get(), .seq_ids = seqs.get(), .n_rows = 4};
    ASSERT_TRUE(cuda::kv_store(cache.device_layer(), batch, dk.get(), 64, dv.get(), 64, nullptr).ok());
    EXPECT_TRUE(cache.dk->download() == cache.k) << "f16=" << f16;
    EXPECT_TRUE(cache.dv->download() == cache.v) << "f16=" << f16;
    ++cases;
  }
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace gufo::ops_test
