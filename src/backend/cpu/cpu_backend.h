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
  // A row's numbers do not depend on the batch it is in: the matmul kernels share one
  // accumulation order (quant/dot_kernels.h) and so do the attention paths
  // (NOTE(attention_avx2)), so a request's greedy output does not change with its batch-mates,
  // its prefill chunks or a prefix-cache hit (tests/unit/model/paged_kv_test.cpp).
  explicit CpuBackend(int n_threads = 0);

  std::string_view name() const override { return "cpu"; }
  backend::Capabilities capabilities() const override;
  // Host RAM (MemAvailable of /proc/meminfo); zeros where the system does not say.
  backend::MemoryInfo memory() const override;
  bool supports(const model::Node& node) const override;
  // Weights are read in place from the mmap'd file: nothing to prepare (Model::load has
  // checked supports() for every node).
  Status prepare_weights(const model::Graph& graph) override;
  Result<std::unique_ptr<backend::KvCache>> create_kv_cache(const backend::KvCacheSpec& spec) override;
  Status forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache,
                 const backend::ForwardOutputs& outputs, const backend::NodeTap* tap = nullptr) override;

  int n_threads() const { return pool_.n_threads(); }

 private:
  ThreadPool pool_;
};

}  // namespace gufo::cpu
