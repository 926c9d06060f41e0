// The CPU backend: runs a model graph node by node with the operators in ops/, over a thread
// pool, with the KV cache in host memory (F16 or F32). Weights are read in place from the
// mmap'd GGUF. Tested by tests/unit/model/forward_test.cpp.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/cpu/thread_pool.h"

namespace gufo::cpu {

class CpuBackend final : public backend::Backend {
 public:
  // batch_invariant: every row's numbers are what they would be alone (row kernels for all
  // matmuls, row-by-row attention), so a request's greedy output does not depend on what it
  // shares a batch or a prefix-cache hit with; prefill is slower (no packed panels, no
  // batched attention). The MoE FFN is not covered (its expert batches stay packed).
  explicit CpuBackend(int n_threads = 0, bool batch_invariant = false);

  std::string_view name() const override { return "cpu"; }
  bool supports(const model::Node& node) const override;
  Result<std::unique_ptr<backend::KvCache>> create_kv_cache(const backend::KvCacheSpec& spec) override;
  Status forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache,
                 std::span<float> logits) override;

  int n_threads() const { return pool_.n_threads(); }

 private:
  ThreadPool pool_;
  bool batch_invariant_;
};

}  // namespace gufo::cpu
