// The fused runs of the CUDA backend (ops.h, "fused runs"; fusion_plan.h) against the
// separate kernels they replace: the same bits, over the shapes of the four architectures
// (whole rows of 64 to 5120, both quantized activation formats, q/k heads of 16 to 128 with
// and without the KV cache store, a Qwen3-8B-wide SwiGLU),
// and against the CPU within rms_norm's tolerance.
#include <gtest/gtest.h>

#include <cstddef>

#include "backend/cpu/ops/ops.h"
#include "backend/cuda/ops/ops.h"
#include "tests/ops/ops_harness.h"

namespace gufo::ops_test {
namespace {

struct DeviceActs {
  DeviceBuffer<std::byte> memory;
  cuda::QuantActs acts;
  DeviceActs(int64_t rows, int64_t k, bool q8k)
      : memory(cuda::quant_acts_bytes(rows, k, q8k)), acts(cuda::quant_acts_at(memory.get(), rows, k, q8k)) {}
};

TEST(CudaFused, AddRmsNormGivesTheSeparateKernelsBits) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(11);
  int cases = 0;
  struct Case {
    int64_t rows, cols;
  };
  enum class Quant { None, Q8_0, Q8K };
  // 70 and 1030 are not float4 widths: the scalar paths, narrow and wide. 1024 to 8192: a row
  // held in registers, a piece or two per thread of 1024 (2560: 640 pieces); 9216: too wide.
  for (const Case c : {Case{1, 4096}, Case{3, 2048}, Case{8, 5120}, Case{7, 512}, Case{2, 64}, Case{5, 1024},
                       Case{1, 96}, Case{3, 70}, Case{2, 1030}, Case{2, 2560}, Case{1, 8192}, Case{2, 9216}}) {
    for (Quant quant : {Quant::None, Quant::Q8_0, Quant::Q8K}) {
      if ((quant == Quant::Q8K && c.cols % 256 != 0) || (quant == Quant::Q8_0 && c.cols % 32 != 0)) continue;
      for (bool with_add : {true, false}) {
        const size_t n = static_cast<size_t>(c.rows * c.cols);
        const std::vector<float> a = random_floats(n, rng, 2.0f);
        const std::vector<float> b = random_floats(n, rng, 2.0f);
        const std::vector<float> w = random_floats(static_cast<size_t>(c.cols), rng);
        DeviceBuffer<float> da(a), db(b), dw(w), sum1(n), sum2(n), out1(n), out2(n);
        const bool q8k = quant == Quant::Q8K;
        DeviceActs q1(c.rows, c.cols, q8k), q2(c.rows, c.cols, q8k);
        // The separate kernels.
        const float* in = da.get();
        if (with_add) {
          ASSERT_TRUE(cuda::add(da.get(), db.get(), c.rows, c.cols, c.rows, sum1.get(), nullptr).ok());
          in = sum1.get();
        }
        ASSERT_TRUE(cuda::rms_norm(in, c.rows, c.cols, dw.get(), c.cols, 1e-6f, out1.get(), nullptr).ok());
        if (quant != Quant::None) {
          ASSERT_TRUE(cuda::quantize_acts(out1.get(), c.cols, q1.acts, nullptr).ok());
        }
        // The fused one.
        ASSERT_TRUE(cuda::add_rms_norm(da.get(), with_add ? db.get() : nullptr, c.rows, c.cols, sum2.get(), dw.get(),
                                       1e-6f, out2.get(), quant != Quant::None ? &q2.acts : nullptr, nullptr)
                        .ok());
        const std::string what = "rows=" + std::to_string(c.rows) + " cols=" + std::to_string(c.cols) +
                                 " quant=" + std::to_string(static_cast<int>(quant)) +
                                 " add=" + std::to_string(with_add);
        if (with_add) {
          EXPECT_EQ(compare(sum2.download(), sum1.download()).mismatches, 0u) << what;
        }
        const std::vector<float> got = out2.download();
        EXPECT_EQ(compare(got, out1.download()).mismatches, 0u) << what;
        if (quant != Quant::None) {
          EXPECT_TRUE(q2.memory.download() == q1.memory.download()) << what;
        }
        // And the CPU, as rms_norm's own test allows.
        std::vector<float> x = a;
        if (with_add) {
          for (size_t i = 0; i < n; ++i) x[i] = a[i] + b[i];
        }
        std::vector<float> want(n);
        cpu::rms_norm(x.data(), c.rows, c.cols, w.data(), c.cols, 1e-6f, want.data());
        EXPECT_LT(compare(got, want).max_rel, 1e-5) << what;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 0);
}

TEST(CudaFused, SwigluQuantGivesTheSeparateKernelsBits) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(13);
  int cases = 0;
  for (int64_t rows : {1, 3, 40}) {
    for (int64_t cols : {256, 1024, 12288}) {
      for (bool q8k : {false, true}) {
        const size_t n = static_cast<size_t>(rows * cols);
        const std::vector<float> g = random_floats(n, rng, 4.0f);
        const std::vector<float> u = random_floats(n, rng, 2.0f);
        DeviceBuffer<float> dg(g), du(u), out1(n), out2(n);
        DeviceActs q1(rows, cols, q8k), q2(rows, cols, q8k);
        ASSERT_TRUE(cuda::swiglu(dg.get(), du.get(), static_cast<int64_t>(n), out1.get(), nullptr).ok());
        ASSERT_TRUE(cuda::quantize_acts(out1.get(), cols, q1.acts, nullptr).ok());
        ASSERT_TRUE(cuda::swiglu_quant(dg.get(), du.get(), rows, cols, out2.get(), q2.acts, nullptr).ok());
        const std::string what =
            "rows=" + std::to_string(rows) + " cols=" + std::to_string(cols) + " q8k=" + std::to_string(q8k);
        EXPECT_EQ(compare(out2.download(), out1.download()).mismatches, 0u) << what;
        EXPECT_TRUE(q2.memory.download() == q1.memory.download()) << what;
        ++cases;
      }
    }
  }
  EXPECT_GT(cases, 0);
}

// A paged pool of two sequences (16 positions a block, the tables interleaved) for the KV store.
struct Pool {
  // (f16 and width first: the buffers' sizes follow them)
  static constexpr int32_t kShift = 4;
  static constexpr int64_t kStride = 16;  // blocks per sequence: positions up to 255
  bool f16;
  int64_t width;
  DeviceBuffer<std::byte> k, v;
  DeviceBuffer<int32_t> tables;
  Pool(bool f16_, int64_t width_)
      : f16(f16_), width(width_), k(bytes()), v(bytes()), tables(interleaved()) {}  // both pools all-ones bytes
  size_t bytes() const { return static_cast<size_t>(2 * kStride * 16 * width) * (f16 ? 2 : 4); }
  static std::vector<int32_t> interleaved() {
    std::vector<int32_t> t(2 * kStride);
    for (int64_t b = 0; b < kStride; ++b) {
      t[static_cast<size_t>(b)] = static_cast<int32_t>(2 * b + 1);
      t[static_cast<size_t>(kStride + b)] = static_cast<int32_t>(2 * b);
    }
    return t;
  }
  cuda::KvLayer layer() {
    return {.k = k.get(),
            .v = v.get(),
            .f16 = f16,
            .n_embd_kv = width,
            .block_shift = kShift,
            .tables = tables.get(),
            .table_stride = kStride};
  }
};

TEST(CudaFused, QkNormRopeGivesTheSeparateKernelsBits) {
  GUFO_REQUIRE_GPU();
  std::mt19937 rng(12);
  int cases = 0;
  // 80, 96 and 112: partners 10, 12 and 14 lanes apart, not a power of two.
  for (int64_t head_dim : {16, 32, 64, 80, 96, 112, 128}) {
    for (int64_t rows : {1, 5, 33}) {
      for (bool factors : {false, true}) {
        // store: 0 none, 1 into an f16 cache, 2 into an f32 cache (against kv_store's bytes).
        for (int store : {0, 1, 2}) {
          const int64_t n_head = 8, n_head_kv = 2;
          const int64_t q_cols = n_head * head_dim, k_cols = n_head_kv * head_dim;
          const std::vector<float> q = random_floats(static_cast<size_t>(rows * q_cols), rng, 3.0f);
          const std::vector<float> k = random_floats(static_cast<size_t>(rows * k_cols), rng, 3.0f);
          const std::vector<float> v = random_floats(static_cast<size_t>(rows * k_cols), rng, 3.0f);
          const std::vector<float> wq = random_floats(static_cast<size_t>(head_dim), rng);
          const std::vector<float> wk = random_floats(static_cast<size_t>(head_dim), rng);
          std::vector<int32_t> positions(static_cast<size_t>(rows)), seqs(static_cast<size_t>(rows));
          for (int64_t r = 0; r < rows; ++r) {
            positions[static_cast<size_t>(r)] = static_cast<int32_t>(store ? (r * 37) % 256 : (r * 977) % 40000);
            // the last of several rows is padding: it stores nothing
            seqs[static_cast<size_t>(r)] = rows > 1 && r == rows - 1 ? cuda::kPaddingSeq : static_cast<int32_t>(r % 2);
          }
          std::vector<float> ff(static_cast<size_t>(head_dim / 2));
          for (size_t i = 0; i < ff.size(); ++i) ff[i] = 1.0f + static_cast<float>(i % 5);
          DeviceBuffer<float> dq(q), dk(k), dv(v), dwq(wq), dwk(wk), dff(ff);
          DeviceBuffer<int32_t> dpos(positions), dseqs(seqs);
          DeviceBuffer<float> qn1(q.size()), kn1(k.size()), qo1(q.size()), ko1(k.size());
          DeviceBuffer<float> qn2(q.size()), kn2(k.size()), qo2(q.size()), ko2(k.size());
          Pool separate(store == 1, k_cols), fused(store == 1, k_cols);
          const float* fp = factors ? dff.get() : nullptr;
          DeviceBuffer<float> angles(static_cast<size_t>(rows * head_dim));
          ASSERT_TRUE(cuda::rope_angles(dpos.get(), rows, head_dim, 1e6f, fp, angles.get(), nullptr).ok());
          ASSERT_TRUE(cuda::rms_norm(dq.get(), rows, q_cols, dwq.get(), head_dim, 1e-6f, qn1.get(), nullptr).ok());
          ASSERT_TRUE(cuda::rms_norm(dk.get(), rows, k_cols, dwk.get(), head_dim, 1e-6f, kn1.get(), nullptr).ok());
          ASSERT_TRUE(cuda::rope(qn1.get(), qo1.get(), rows, q_cols, angles.get(), head_dim, true, nullptr).ok());
          ASSERT_TRUE(cuda::rope(kn1.get(), ko1.get(), rows, k_cols, angles.get(), head_dim, true, nullptr).ok());
          const cuda::BatchRows batch{.positions = dpos.get(), .seq_ids = dseqs.get(), .n_rows = rows};
          if (store) {
            ASSERT_TRUE(cuda::kv_store(separate.layer(), batch, ko1.get(), k_cols, dv.get(), k_cols, nullptr).ok());
          }
          ASSERT_TRUE(cuda::qk_norm_rope({.q = dq.get(),
                                          .k = dk.get(),
                                          .rows = rows,
                                          .n_head = n_head,
                                          .n_head_kv = n_head_kv,
                                          .head_dim = head_dim,
                                          .q_norm = dwq.get(),
                                          .k_norm = dwk.get(),
                                          .eps = 1e-6f,
                                          .angles = angles.get(),
                                          .positions = dpos.get(),
                                          .q_normed = qn2.get(),
                                          .k_normed = kn2.get(),
                                          .q_out = qo2.get(),
                                          .k_out = ko2.get(),
                                          .kv = store ? fused.layer() : cuda::KvLayer{},
                                          .seq_ids = dseqs.get(),
                                          .v = store ? dv.get() : nullptr},
                                         nullptr)
                          .ok());
          const std::string what = "head_dim=" + std::to_string(head_dim) + " rows=" + std::to_string(rows) +
                                   " store=" + std::to_string(store);
          EXPECT_EQ(compare(qn2.download(), qn1.download()).mismatches, 0u) << what;
          EXPECT_EQ(compare(kn2.download(), kn1.download()).mismatches, 0u) << what;
          EXPECT_EQ(compare(qo2.download(), qo1.download()).mismatches, 0u) << what;
          EXPECT_EQ(compare(ko2.download(), ko1.download()).mismatches, 0u) << what;
          EXPECT_TRUE(fused.k.download() == separate.k.download()) << what << ": K cache";
          EXPECT_TRUE(fused.v.download() == separate.v.download()) << what << ": V cache";
          ++cases;
        }
      }
    }
  }
  EXPECT_FALSE(cuda::qk_norm_rope_supports(136));
  EXPECT_FALSE(cuda::qk_norm_rope_supports(12));
  EXPECT_GT(cases, 0);
}

}  // namespace
}  // namespace gufo::ops_test
