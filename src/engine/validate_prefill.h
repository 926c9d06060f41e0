// --validate-prefill: the prompt is evaluated as one batch and again token by token (two
// fresh sessions), and the logits of every position compared. A batched prefill that differs
// from decoding beyond the tolerances below is a bug (a kernel that tiles wrongly, a mask
// off by one), not noise. Tested by tests/unit/model/forward_test.cpp.
#pragma once

#include <span>
#include <vector>

#include "core/result.h"
#include "engine/model.h"

namespace gufo::engine {

// NOTE(validate): the reference CPU path computes each row with the same arithmetic in
// batch and decode, so its differences are ~0; faster paths may reorder sums. The limits
// allow reordering in f32 (relative ~1e-5 of the logit scale) with a wide margin, and fail
// anything that changes which tokens are likely.
inline constexpr double kValidateMaxAbsLogitRel = 1e-3;  // max |Δlogit| / max |logit| per row
inline constexpr double kValidateMaxKl = 1e-4;           // KL(batch ‖ token by token), nats

struct PrefillPosition {
  double max_abs_diff = 0.0;
  double max_abs_logit = 0.0;
  double kl = 0.0;
};

struct PrefillReport {
  std::vector<PrefillPosition> positions;
  bool ok = true;
};

Result<PrefillReport> validate_prefill(const Model& model, backend::Backend& backend, std::span<const int32_t> prompt,
                                       DType cache_type);

// KL(p ‖ q) of the softmax distributions of two logit rows, in nats (double precision).
double kl_divergence(std::span<const float> p_logits, std::span<const float> q_logits);

}  // namespace gufo::engine
