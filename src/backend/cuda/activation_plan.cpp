// plan_activations (see activation_plan.h).
#include "backend/cuda/activation_plan.h"

#include <algorithm>
#include <iterator>
#include <map>

#include "backend/cuda/alignment.h"

namespace gufo::cuda {

namespace {

// Free ranges of the arena, by offset; the arena grows at its end when nothing fits.
class FirstFit {
 public:
  size_t take(size_t bytes) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < bytes) continue;
      const size_t offset = it->first;
      const size_t left = it->second - bytes;
      free_.erase(it);
      if (left > 0) free_[offset + bytes] = left;
      return offset;
    }
    // Extend a free range that ends at the arena's end, or the arena itself.
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        const size_t offset = last->first;
        free_.erase(last);
        end_ = offset + bytes;
        return offset;
      }
    }
    const size_t offset = end_;
    end_ += bytes;
    return offset;
  }
  void give_back(size_t offset, size_t bytes) {
    auto [it, inserted] = free_.emplace(offset, bytes);
    // Merge with the neighbours so that big buffers can reuse small freed ones.
    if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  size_t end() const { return end_; }

 private:
  std::map<size_t, size_t> free_;  // offset -> bytes
  size_t end_ = 0;
};

}  // namespace

ActivationPlan plan_activations(const model::Graph& graph, const std::vector<model::NodeId>* run_end) {
  const size_t n = graph.nodes.size();
  std::vector<model::NodeId> last_use(n, model::kNoNode);
  for (size_t id = 0; id < n; ++id) {
    for (model::NodeId src : graph.nodes[id].src) {
      if (src != model::kNoNode) last_use[static_cast<size_t>(src)] = static_cast<model::NodeId>(id);
    }
  }
  // A buffer goes back once its last reader has run: with fused runs, once the run of that
  // reader has (its kernel reads and writes every member's buffers at once).
  std::vector<std::vector<size_t>> releases(n);
  for (size_t s = 0; s < n; ++s) {
    if (last_use[s] == model::kNoNode || static_cast<model::NodeId>(s) == graph.output) continue;
    const model::NodeId at = run_end != nullptr ? (*run_end)[static_cast<size_t>(last_use[s])] : last_use[s];
    releases[static_cast<size_t>(at)].push_back(s);
  }
  ActivationPlan plan;
  plan.offsets.assign(n, kNoBuffer);
  std::vector<size_t> sizes(n, 0);
  FirstFit arena;
  for (size_t id = 0; id < n; ++id) {
    const model::Node& node = graph.nodes[id];
    if (node.op == model::Op::Weight || node.op == model::Op::Tokens) continue;
    sizes[id] = aligned_bytes(static_cast<size_t>(node.rows * node.cols) * sizeof(float));
    plan.offsets[id] = arena.take(sizes[id]);
    for (size_t s : releases[id]) {
      if (plan.offsets[s] != kNoBuffer) arena.give_back(plan.offsets[s], sizes[s]);
    }
  }
  plan.arena_bytes = std::max<size_t>(arena.end(), kDeviceAlign);
  return plan;
}

}  // namespace gufo::cuda
