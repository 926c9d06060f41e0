// weight_to_f32 and get_rows: reading weights of any type as f32 rows (see ops.h).
#include <string>

#include "backend/cpu/ops/ops.h"
#include "quant/quant.h"

namespace gufo::cpu {

Result<std::vector<float>> weight_to_f32(const model::Weight& w) {
  std::vector<float> out(static_cast<size_t>(w.rows * w.cols));
  for (int64_t row = 0; row < w.rows; ++row) {
    GUFO_RETURN_IF_ERROR(
        quant::dequantize_row(w.type, w.data + row * w.row_bytes, w.row_bytes, out.data() + row * w.cols, w.cols));
  }
  return out;
}

Status get_rows(const model::Weight& table, std::span<const int32_t> ids, float* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= table.rows) {
      return Error{"token id " + std::to_string(ids[i]) + " is outside the vocabulary of " +
                   std::to_string(table.rows) + " tokens"};
    }
    GUFO_RETURN_IF_ERROR(quant::dequantize_row(table.type, table.data + ids[i] * table.row_bytes, table.row_bytes,
                                               out + i * table.cols, table.cols));
  }
  return {};
}

}  // namespace gufo::cpu
