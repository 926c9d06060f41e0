// Causal attention over the paged f16 KV cache on tensor cores (attention_mma.cu), for the
// head layouts of the supported models (head_dim 64 or 128, a GQA group that divides 16).
// The contract is attention()'s in ops.h; attention.cu picks this kernel by layout and cache
// type alone, so a row takes the same path in every batch. Internal to backend/cuda/ops.
#pragma once

#include <cstdint>

#include "backend/cuda/ops/ops.h"

namespace gufo::cuda {

bool attention_mma_supports(const KvLayer& kv, const AttentionShape& shape);

// partials == null: each block walks its rows' splits and writes `out`; otherwise (at most
// kSplitBlocksMaxRows rows) a block per split writes its partial there (attention_split.cuh)
// and the block that writes a row's last partial merges them, counting on `tickets`
// ([n_rows, n_head_kv] zeros, left zero).
Status attention_mma(const KvLayer& kv, const BatchRows& batch, const AttentionShape& shape, const float* q,
                     int64_t ldq, int64_t max_splits, float* partials, int32_t* tickets, float* out, int64_t ldo,
                     gpu::stream_t stream);

}  // namespace gufo::cuda
