// GET /metrics: the engine's counters (engine/stats.h), one series per loaded model labelled
// model="<id>" (as vLLM labels model_name), and the server's own (HTTP requests by route and
// status) in the Prometheus text exposition format, version 0.0.4. A model that is unloaded
// takes its series with it; loaded again, its counters start from zero (a counter reset, which
// Prometheus' rate() allows for).
// Tested by tests/unit/server/metrics_test.cpp and the functional suite's concurrency profile.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <span>
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

struct ModelStats {
  std::string model;  // the id /v1/models lists
  engine::EngineStats stats;
};

std::string render_metrics(std::span<const ModelStats> models,
                           const std::map<std::pair<std::string, int>, uint64_t>& http);

}  // namespace gufo::server
