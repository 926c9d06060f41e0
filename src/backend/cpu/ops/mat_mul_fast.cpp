// mat_mul_fast: the matmul the CPU backend runs; same contract as the reference mat_mul
// (mat_mul.cpp, see ops.h) but with SIMD row dots (quant/dot_kernels.h) against an activation
// quantized once per call. Tested against mat_mul by tests/unit/backend/cpu_matmul_test.cpp.
//
// Work split: the pool takes contiguous ranges of weight rows (output columns). Inside a
// range, a tile of kWeightTile weight rows is swept by tiles of kRowTile activation rows, so
// each weight row is read from memory once per tile of activation rows and then from L1, and
// the tile of weight rows stays in L2 while every activation row passes over it. A whole tile
// of activation rows goes to the kernel set's DotRowsFn when it has one (one unpacking of each
// weight block for kDotRows rows); the rows of a partial tile (a decode step) go through its
// DotWeightsFn, four weight rows at a time, when it has one, else the one-row dot. Every
// path gives the same bits (dot_kernels.h, "Accumulation order").
// Batches of PackedPath::min_rows rows or more (per kernel set and type) go through packed
// weight panels instead when the kernel set has them (dot_kernels.h, "Packed weight panels"), for all whole panels.
#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "backend/cpu/quant/dot_kernels.h"

namespace gufo::cpu {
namespace {

// NOTE(mat_mul_fast): 16 rows of a 4096-wide Q8_0 weight are ~70 KiB (L2-resident); 4
// activation rows of Q8_K are ~4.6 KiB, so a weight row (<= 16 KiB at F32) and the tile of
// activations fit together in a 48 KiB L1.
constexpr int64_t kWeightTile = 16;
constexpr int64_t kRowTile = fast::kDotRows;
// Panels packed together, then swept by each tile of activation rows: 4 panels of a
// 3072-wide Q4_K matrix are ~140 KiB of scratch, L2-resident, and the activation tile is read
// once per 4 panels instead of once per panel.
constexpr int64_t kPanelsPerSweep = 4;

}  // namespace

Status mat_mul_fast(ThreadPool& pool, const fast::DotKernels& kernels, const float* x, int64_t rows, int64_t k,
                    const model::Weight& w, float* out) {
  if (w.cols != k) return Error{"mat_mul_fast: '" + w.name + "' has the wrong width"};
  if (rows < 0 || k < 0) return Error{"mat_mul_fast: negative shape for '" + w.name + "'"};
  const fast::DotFn dot = fast::dot_for(kernels, w.type);
  const fast::DotRowsFn dot_rows = fast::dot_rows_for(kernels, w.type);           // may be nullptr
  const fast::DotTileFn dot_tile = fast::dot_tile_for(kernels, w.type);           // may be nullptr
  const fast::DotWeightsFn dot_weights = fast::dot_weights_for(kernels, w.type);  // may be nullptr
  const fast::ActivationFormat format = fast::activation_format(w.type);
  if (dot == nullptr || format == fast::ActivationFormat::Unsupported) {
    return Error{"mat_mul_fast: '" + w.name + "' has type " + std::string(dtype_name(w.type)) +
                 ", which has no dot kernel"};
  }
  const DTypeInfo info = dtype_info(w.type);
  if (k % info.block_elems != 0) {
    return Error{"mat_mul_fast: '" + w.name + "': " + std::string(info.name) + " needs k % " +
                 std::to_string(info.block_elems) + " == 0, got " + std::to_string(k)};
  }
  if (w.row_bytes < dtype_row_bytes(info, static_cast<uint64_t>(k))) {
    return Error{"mat_mul_fast: '" + w.name + "': rows of " + std::to_string(w.row_bytes) + " bytes cannot hold " +
                 std::to_string(k) + " elements"};
  }
  const int64_t n_out = w.rows;
  if (rows == 0 || n_out == 0) return {};

  // The activation rows in the format the kernel wants, quantized once for all weight rows.
  // NOTE(mat_mul_fast): the buffers (and the panels' scratch below) live on across calls and
  // only grow, per thread: allocating them per call zeroed and page-faulted ~1% of prefill.
  thread_local std::vector<fast::ActBlockQ8_0> x_q8_0;
  thread_local std::vector<quant::BlockQ8K> x_q8_k;
  const std::byte* act = reinterpret_cast<const std::byte*>(x);
  size_t act_row_bytes = static_cast<size_t>(k) * sizeof(float);
  if (format == fast::ActivationFormat::Q8_0) {
    const int64_t blocks = k / quant::kQ8_0BlockElems;
    if (x_q8_0.size() < static_cast<size_t>(rows * blocks)) x_q8_0.resize(static_cast<size_t>(rows * blocks));
    fast::ActBlockQ8_0* const quantized = x_q8_0.data();  // this thread's buffer, for the workers too
    pool.parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        kernels.quantize_q8_0(x + r * k, quantized + r * blocks, k);
      }
    });
    act = reinterpret_cast<const std::byte*>(quantized);
    act_row_bytes = static_cast<size_t>(blocks) * sizeof(fast::ActBlockQ8_0);
  } else if (format == fast::ActivationFormat::Q8K) {
    const int64_t blocks = k / quant::kQkK;
    if (x_q8_k.size() < static_cast<size_t>(rows * blocks)) x_q8_k.resize(static_cast<size_t>(rows * blocks));
    quant::BlockQ8K* const quantized = x_q8_k.data();  // this thread's buffer, for the workers too
    pool.parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        kernels.quantize_q8_k(x + r * k, quantized + r * blocks, k);
      }
    });
    act = reinterpret_cast<const std::byte*>(quantized);
    act_row_bytes = static_cast<size_t>(blocks) * sizeof(quant::BlockQ8K);
  }

  // Batches: whole panels of kPackedWeightRows weight rows through the packed kernels.
  int64_t n_done = 0;
  const fast::PackedPath packed = fast::packed_path_for(kernels, w.type, k);
  if (packed.gemm != nullptr && rows >= packed.min_rows) {
    const int64_t n_panels = n_out / fast::kPackedWeightRows;
    pool.parallel_for(n_panels, kPanelsPerSweep, [&](int64_t begin, int64_t end) {
      thread_local std::vector<std::byte> scratch;
      if (scratch.size() < static_cast<size_t>(kPanelsPerSweep) * packed.bytes) {
        scratch.resize(static_cast<size_t>(kPanelsPerSweep) * packed.bytes);
      }
      for (int64_t first = begin; first < end; first += kPanelsPerSweep) {
        const int64_t count = std::min(end - first, kPanelsPerSweep);
        for (int64_t p = 0; p < count; ++p) {
          const int64_t n = (first + p) * fast::kPackedWeightRows;
          packed.pack(k, w.data + static_cast<size_t>(n) * w.row_bytes, w.row_bytes,
                      scratch.data() + static_cast<size_t>(p) * packed.bytes);
        }
        for (int64_t r = 0; r < rows; r += fast::kPackedActRows) {
          const int n_rows = static_cast<int>(std::min<int64_t>(fast::kPackedActRows, rows - r));
          for (int64_t p = 0; p < count; ++p) {
            const int64_t n = (first + p) * fast::kPackedWeightRows;
            packed.gemm(k, scratch.data() + static_cast<size_t>(p) * packed.bytes,
                        act + static_cast<size_t>(r) * act_row_bytes, act_row_bytes, n_rows, out + r * n_out + n,
                        static_cast<size_t>(n_out));
          }
        }
      }
    });
    n_done = n_panels * fast::kPackedWeightRows;
  }
  if (n_done == n_out) return {};

  // The rest (every row of a decode step, or the weight rows after the last whole panel).
  pool.parallel_for(n_out - n_done, kWeightTile, [&](int64_t begin, int64_t end) {
    begin += n_done;
    end += n_done;
    for (int64_t n_first = begin; n_first < end; n_first += kWeightTile) {
      const int64_t n_last = std::min(end, n_first + kWeightTile);
      for (int64_t r_first = 0; r_first < rows; r_first += kRowTile) {
        const int64_t r_last = std::min(rows, r_first + kRowTile);
        const bool whole_tile = dot_rows != nullptr && r_last - r_first == kRowTile;
        int64_t n = n_first;
        if (whole_tile && dot_tile != nullptr) {
          for (; n + fast::kDotWeightRows <= n_last; n += fast::kDotWeightRows) {
            float dots[fast::kDotWeightRows * kRowTile];
            dot_tile(k, w.data + static_cast<size_t>(n) * w.row_bytes, w.row_bytes,
                     act + static_cast<size_t>(r_first) * act_row_bytes, act_row_bytes, dots);
            for (int64_t i = 0; i < fast::kDotWeightRows; ++i) {
              for (int64_t r = 0; r < kRowTile; ++r) out[(r_first + r) * n_out + n + i] = dots[i * kRowTile + r];
            }
          }
        }
        if (!whole_tile && dot_weights != nullptr) {
          for (; n + fast::kDotWeights <= n_last; n += fast::kDotWeights) {
            for (int64_t r = r_first; r < r_last; ++r) {
              float dots[fast::kDotWeights];
              dot_weights(k, w.data + static_cast<size_t>(n) * w.row_bytes, w.row_bytes,
                          act + static_cast<size_t>(r) * act_row_bytes, dots);
              for (int64_t i = 0; i < fast::kDotWeights; ++i) out[r * n_out + n + i] = dots[i];
            }
          }
        }
        for (; n < n_last; ++n) {
          const std::byte* w_row = w.data + static_cast<size_t>(n) * w.row_bytes;
          if (whole_tile) {
            float dots[kRowTile];
            dot_rows(k, w_row, act + static_cast<size_t>(r_first) * act_row_bytes, act_row_bytes, dots);
            for (int64_t r = 0; r < kRowTile; ++r) out[(r_first + r) * n_out + n] = dots[r];
            continue;
          }
          for (int64_t r = r_first; r < r_last; ++r) {
            out[r * n_out + n] = dot(k, w_row, act + static_cast<size_t>(r) * act_row_bytes);
          }
        }
      }
    }
  });
  return {};
}

Status mat_mul_fast(ThreadPool& pool, const float* x, int64_t rows, int64_t k, const model::Weight& w, float* out) {
  return mat_mul_fast(pool, fast::best_dot_kernels(fast::detected_cpu_features()), x, rows, k, w, out);
}

}  // namespace gufo::cpu
