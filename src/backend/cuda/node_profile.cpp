// NodeProfile (see node_profile.h).
#include "backend/cuda/node_profile.h"

#include <algorithm>
#include <cstdio>

namespace gufo::cuda {

void NodeProfile::mark(const std::string& kind, gpu::stream_t stream) {
  gpu::event_t event = nullptr;
  if (!free_events_.empty()) {
    event = free_events_.back();
    free_events_.pop_back();
  } else if (gpu::event_create(&event) != gpu::success) {
    return;
  }
  gpu::event_record(event, stream);
  marks_.emplace_back(kind, event);
}

void NodeProfile::finish(gpu::stream_t stream) {
  mark("", stream);
  gpu::stream_synchronize(stream);
  for (size_t i = 0; i + 1 < marks_.size(); ++i) {
    float ms = 0.0f;
    if (gpu::event_elapsed_ms(&ms, marks_[i].second, marks_[i + 1].second) == gpu::success) {
      Total& total = totals_[marks_[i].first];
      total.ms += ms;
      ++total.count;
    }
  }
  for (auto& [kind, event] : marks_) free_events_.push_back(event);
  marks_.clear();
}

NodeProfile::~NodeProfile() {
  for (auto& [kind, event] : marks_) gpu::event_destroy(event);
  for (gpu::event_t event : free_events_) gpu::event_destroy(event);
  if (totals_.empty()) return;
  std::vector<std::pair<std::string, Total>> rows(totals_.begin(), totals_.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  double all = 0.0;
  for (const auto& row : rows) all += row.second.ms;
  std::fprintf(stderr, "gufo cuda profile: %.1f ms of GPU time in nodes\n", all);
  std::fprintf(stderr, "  %-34s %10s %8s %10s %6s\n", "node kind", "total ms", "count", "us each", "share");
  for (const auto& [kind, total] : rows) {
    std::fprintf(stderr, "  %-34s %10.2f %8ld %10.2f %5.1f%%\n", kind.c_str(), total.ms, total.count,
                 1000.0 * total.ms / static_cast<double>(total.count), 100.0 * total.ms / all);
  }
}

}  // namespace gufo::cuda
