#include "backend/fault_injection.h"

#include <atomic>
#include <string>
#include <utility>

namespace gufo::backend {

namespace {

class FaultyBackend final : public Backend {
 public:
  FaultyBackend(std::unique_ptr<Backend> inner, const Faults& faults) : inner_(std::move(inner)), faults_(faults) {}

  std::string_view name() const override { return inner_->name(); }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  MemoryInfo memory() const override { return inner_->memory(); }
  bool supports(const model::Node& node) const override { return inner_->supports(node); }
  Status prepare_weights(const model::Graph& graph) override { return inner_->prepare_weights(graph); }
  Result<std::unique_ptr<KvCache>> create_kv_cache(const KvCacheSpec& spec) override {
    return inner_->create_kv_cache(spec);
  }

  Status forward(const model::Graph& graph, const Batch& batch, KvCache& cache, const ForwardOutputs& outputs,
                 const NodeTap* tap) override {
    const int64_t call = ++calls_;
    if (faults_.device_lost_at > 0 && call >= faults_.device_lost_at) {
      return Error{"GUFO_FAULTS: injected device loss (forward call " + std::to_string(call) + ")",
                   ErrorKind::DeviceLost};
    }
    if (call == faults_.forward_oom_at) {
      return Error{"GUFO_FAULTS: injected out-of-memory (forward call " + std::to_string(call) + ")",
                   ErrorKind::OutOfMemory};
    }
    return inner_->forward(graph, batch, cache, outputs, tap);
  }

 private:
  std::unique_ptr<Backend> inner_;
  Faults faults_;
  std::atomic<int64_t> calls_{0};
};

}  // namespace

std::unique_ptr<Backend> with_injected_faults(std::unique_ptr<Backend> inner, const Faults& faults) {
  if (!faults.any_forward_fault()) return inner;
  return std::make_unique<FaultyBackend>(std::move(inner), faults);
}

}  // namespace gufo::backend
