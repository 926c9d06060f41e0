// GET /metrics: the engine's counters (engine/stats.h) and the server's own (HTTP requests
// by route and status) in the Prometheus text exposition format, version 0.0.4.
// NOTE(metrics): with several models, the engine counters are the default model's; one
// labelled series per model is still to come.
// Tested by tests/unit/server/metrics_test.cpp and the functional suite's concurrency profile.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/stats.h"

namespace gufo::server {

class HttpCounters {
 public:
  void count(const std::string& route, int status) {
    std::lock_guard lock(mutex_);
    ++counts_[{route, status}];
  }
  std::map<std::pair<std::string, int>, uint64_t> snapshot() const {
    std::lock_guard lock(mutex_);
    return counts_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> counts_;
};

std::string render_metrics(const engine::EngineStats& stats, const std::map<std::pair<std::string, int>, uint64_t>& http);

}  // namespace gufo::server
