// DeviceWeights (see device_weights.h).
#include "backend/cuda/device_weights.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/alignment.h"
#include "backend/cuda/check.cuh"
#include "quant/blocks.h"
#include "quant/quant.h"

namespace gufo::cuda {

namespace {

// NOTE(device_weights): 64 MiB of staging keeps host memory small and is far past the size
// where a host-to-device copy reaches full speed.
constexpr size_t kStagingBytes = size_t{64} << 20;

// Bytes of the d and scales arrays per row in the split layouts.
size_t d_bytes_per_row(DType type, int64_t cols) {
  if (type == DType::Q8_0) return static_cast<size_t>(cols / 32) * 2;
  if (type == DType::Q6_K) return static_cast<size_t>(cols / 256) * 2;
  return 0;
}
size_t scale_bytes_per_row(DType type, int64_t cols) {
  return type == DType::Q6_K ? static_cast<size_t>(cols / 16) : 0;
}

// Where the q, d and scales arrays of a weight start in its one allocation.
struct MatrixLayout {
  size_t q_bytes = 0;
  size_t d_bytes = 0;
  size_t sc_bytes = 0;
  size_t total() const { return q_bytes + d_bytes + sc_bytes; }
};

MatrixLayout layout_of(const model::Weight& w) {
  const auto rows = static_cast<size_t>(w.rows * w.n_expert);
  return {.q_bytes = aligned_bytes(device_row_bytes(w.type, w.cols) * rows),
          .d_bytes = aligned_bytes(d_bytes_per_row(w.type, w.cols) * rows),
          .sc_bytes = aligned_bytes(scale_bytes_per_row(w.type, w.cols) * rows)};
}

// One row of GGUF blocks into the split layout: quants to q, fp16 scales to d, Q6_K's 8-bit
// sub-block scales to sc.
void repack_row(DType type, const std::byte* src, int64_t cols, std::byte* q, std::byte* d, std::byte* sc) {
  if (type == DType::Q8_0) {
    const auto* blocks = reinterpret_cast<const quant::BlockQ8_0*>(src);
    for (int64_t b = 0; b < cols / 32; ++b) {
      std::memcpy(q + b * 32, blocks[b].qs, 32);
      std::memcpy(d + b * 2, &blocks[b].d, 2);
    }
    return;
  }
  const auto* blocks = reinterpret_cast<const quant::BlockQ6K*>(src);
  for (int64_t b = 0; b < cols / 256; ++b) {
    std::memcpy(q + b * 192, blocks[b].ql, 128);
    std::memcpy(q + b * 192 + 128, blocks[b].qh, 64);
    std::memcpy(sc + b * 16, blocks[b].scales, 16);
    std::memcpy(d + b * 2, &blocks[b].d, 2);
  }
}

}  // namespace

bool device_supports_type(DType type) { return device_row_bytes(type, 256) != 0; }

uint64_t DeviceWeights::matrix_bytes(const model::Weight& w) { return layout_of(w).total(); }

uint64_t DeviceWeights::vector_bytes(const model::Weight& w) {  // f32 values
  return aligned_bytes(static_cast<size_t>(w.rows * w.cols * w.n_expert) * sizeof(float));
}

Status DeviceWeights::stage_repacked(const model::Weight& w, Matrix& m, gpu::stream_t stream) {
  const std::string context = "uploading tensor '" + w.name + "'";
  if (staging_.get() == nullptr) {
    GUFO_ASSIGN_OR_RETURN(staging_, PinnedMemory::allocate(kStagingBytes, "weight staging"));
  }
  const int64_t rows = w.rows * w.n_expert;
  const size_t q_row = m.view.q_row_bytes;
  const size_t d_row = d_bytes_per_row(w.type, w.cols);
  const size_t sc_row = scale_bytes_per_row(w.type, w.cols);
  const auto chunk_rows = static_cast<int64_t>(std::max<size_t>(1, kStagingBytes / (q_row + d_row + sc_row)));
  auto* q_dst = m.memory.get<std::byte>();
  auto* d_dst = reinterpret_cast<std::byte*>(const_cast<uint16_t*>(m.view.d));
  auto* sc_dst = reinterpret_cast<std::byte*>(const_cast<int8_t*>(m.view.scales));
  for (int64_t first = 0; first < rows; first += chunk_rows) {
    const int64_t n = std::min(chunk_rows, rows - first);
    auto* q = staging_.get<std::byte>();
    std::byte* d = q + n * q_row;
    std::byte* sc = d + n * d_row;
    for (int64_t r = 0; r < n; ++r) {
      repack_row(w.type, w.data + static_cast<size_t>(first + r) * w.row_bytes, w.cols, q + r * q_row, d + r * d_row,
                 sc + r * sc_row);
    }
    GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_device_async(q_dst + first * q_row, q, n * q_row, stream), context);
    GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_device_async(d_dst + first * d_row, d, n * d_row, stream), context);
    if (sc_row > 0) {
      GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_device_async(sc_dst + first * sc_row, sc, n * sc_row, stream), context);
    }
    GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream), context);  // the staging is reused
  }
  return {};
}

Status DeviceWeights::upload_matrix(const model::Weight& w, gpu::stream_t stream) {
  if (matrices_.contains(&w)) return {};
  const std::string context = "uploading tensor '" + w.name + "'";
  if (!device_supports_type(w.type)) {
    return Error{"tensor '" + w.name + "' of type " + std::string(dtype_name(w.type)) +
                     ": the cuda backend has no kernels for this type (it runs F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K)",
                 ErrorKind::Unsupported};
  }
  const int64_t rows = w.rows * w.n_expert;
  Matrix m;
  m.view.type = w.type;
  m.view.rows = rows;
  m.view.cols = w.cols;
  m.view.rows_per_expert = w.rows;
  m.view.q_row_bytes = device_row_bytes(w.type, w.cols);
  const MatrixLayout layout = layout_of(w);
  GUFO_ASSIGN_OR_RETURN(m.memory, DeviceMemory::allocate(layout.total(), "tensor '" + w.name + "'"));
  auto* base = m.memory.get<std::byte>();
  m.view.q = base;
  if (layout.d_bytes > 0) {
    m.view.d = reinterpret_cast<const uint16_t*>(base + layout.q_bytes);
    m.view.d_per_row = w.type == DType::Q8_0 ? w.cols / 32 : w.cols / 256;
  }
  if (layout.sc_bytes > 0) m.view.scales = reinterpret_cast<const int8_t*>(base + layout.q_bytes + layout.d_bytes);
  if (w.type == DType::Q8_0 || w.type == DType::Q6_K) {
    GUFO_RETURN_IF_ERROR(stage_repacked(w, m, stream));
  } else {
    // The GGUF layout is the device layout: one copy straight from the mapped file.
    GUFO_GPU_RETURN_IF_ERROR(gpu::copy_to_device(base, w.data, w.row_bytes * static_cast<size_t>(rows)), context);
  }
  matrices_.emplace(&w, std::move(m));
  return {};
}

Status DeviceWeights::upload_vector(const model::Weight& w, gpu::stream_t stream) {
  if (vectors_.contains(&w)) return {};
  const int64_t n = w.rows * w.cols * w.n_expert;
  std::vector<float> values(static_cast<size_t>(n));
  for (int64_t row = 0; row < w.rows * w.n_expert; ++row) {
    GUFO_RETURN_IF_ERROR(quant::dequantize_row(w.type, w.data + static_cast<size_t>(row) * w.row_bytes, w.row_bytes,
                                               values.data() + row * w.cols, w.cols));
  }
  GUFO_ASSIGN_OR_RETURN(DeviceMemory memory,
                        DeviceMemory::allocate(values.size() * sizeof(float), "tensor '" + w.name + "'"));
  GUFO_GPU_RETURN_IF_ERROR(
      gpu::copy_to_device_async(memory.get(), values.data(), values.size() * sizeof(float), stream),
      "uploading tensor '" + w.name + "'");
  GUFO_GPU_RETURN_IF_ERROR(gpu::stream_synchronize(stream), "uploading tensor '" + w.name + "'");
  vectors_.emplace(&w, std::move(memory));
  return {};
}

const WeightView* DeviceWeights::matrix(const model::Weight* w) const {
  const auto it = matrices_.find(w);
  return it == matrices_.end() ? nullptr : &it->second.view;
}

const float* DeviceWeights::vector(const model::Weight* w) const {
  const auto it = vectors_.find(w);
  return it == vectors_.end() ? nullptr : it->second.get<float>();
}

}  // namespace gufo::cuda
