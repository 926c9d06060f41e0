// The small-batch path of mat_mul_q (ops.h): up to 8 activation rows, the same bits as the
// MMA tiles (mat_mul_q.cu) and the CPU. Internal to backend/cuda/ops.
#pragma once

#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

struct MatVecArgs {
  WeightView w;
  QuantActs x;
  float* out;
  int64_t ldo;
  ExpertRows experts;  // offsets == null: plain mode
};

bool mat_vec_q_fits(const QuantActs& x, const ExpertRows* experts);
// NOTE(mat_vec_q): written after the last GPU check of its session and not yet run on a GPU,
// so mat_mul_q takes it only with GUFO_CUDA_MATVEC=1 until tests/ops (CudaMatVec) has passed on
// the H200; then it becomes the decode path and this switch goes.
bool mat_vec_q_enabled();
Status mat_vec_q(const MatVecArgs& args, gpu::stream_t stream);

}  // namespace gufo::cuda
