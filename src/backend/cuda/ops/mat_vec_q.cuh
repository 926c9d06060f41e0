// The paths of mat_mul_q (ops.h) beside its own MMA tiles (mat_mul_q.cu), all with the same
// bits as the CPU: mat_vec_q for up to 8 activation rows (decode), mat_mul_q_staged for more
// than 32 (prefill). Internal to backend/cuda/ops.
#pragma once

#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

struct QuantMatMulArgs {
  WeightView w;
  QuantActs x;
  float* out;
  int64_t ldo;
  ExpertRows experts;  // offsets == null: plain mode
};

bool mat_vec_q_fits(const QuantActs& x, const ExpertRows* experts);
Status mat_vec_q(const QuantMatMulArgs& args, gpu::stream_t stream);

// More weights of args.w's type and width that read args.x, in the same launch (in expert
// mode, stacks of as many experts as args.w's, routed by args.experts)
// (kMaxMatMulParts in all, ops.h).
struct MatVecPart {
  WeightView w;
  float* out;
  int64_t ldo;
};
Status mat_vec_q_parts(const QuantMatMulArgs& args, const MatVecPart* more, int n_more, gpu::stream_t stream);

// Runs where current_device_has_mma() (HIP builds keep mat_mul_q.cu's tiles).
// n_tokens: the activation rows (plain mode) or the largest expert's (expert mode).
Status mat_mul_q_staged(const QuantMatMulArgs& args, int64_t n_tokens, gpu::stream_t stream);

}  // namespace gufo::cuda
