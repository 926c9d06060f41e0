// mat_mul, reference: each weight row is dequantized once to f32 and dotted with every input
// row; the pool splits the weight rows (output columns) across threads (see ops.h).
#include <mutex>
#include <vector>

#include "backend/cpu/ops/ops.h"
#include "quant/quant.h"

namespace gufo::cpu {

Status mat_mul(ThreadPool& pool, const float* x, int64_t rows, int64_t k, const model::Weight& w, float* out) {
  if (w.cols != k) return Error{"mat_mul: '" + w.name + "' has the wrong width"};
  const int64_t n_out = w.rows;
  Status status;
  std::mutex error_mutex;
  pool.parallel_for(n_out, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(static_cast<size_t>(k));
    for (int64_t n = begin; n < end; ++n) {
      const float* wrow = row.data();
      if (w.type == DType::F32) {
        wrow = reinterpret_cast<const float*>(w.data + n * w.row_bytes);
      } else if (Status s = quant::dequantize_row(w.type, w.data + n * w.row_bytes, w.row_bytes, row.data(), k);
                 !s.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        status = s;
        return;
      }
      for (int64_t r = 0; r < rows; ++r) {
        const float* xr = x + r * k;
        float sum = 0.0f;
        for (int64_t j = 0; j < k; ++j) sum += xr[j] * wrow[j];
        out[r * n_out + n] = sum;
      }
    }
  });
  return status;
}

}  // namespace gufo::cpu
