// The small-batch path of mat_mul_q (ops.h): up to 8 activation rows (decode), the same bits
// as the MMA tiles (mat_mul_q.cu) and the CPU. Internal to backend/cuda/ops.
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
Status mat_vec_q(const MatVecArgs& args, gpu::stream_t stream);

}  // namespace gufo::cuda
