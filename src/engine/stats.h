// Counters the serving engine keeps for /metrics (server/metrics.cpp renders them in the
// Prometheus text format): requests, tokens, time spent in prefill and decode, latency
// histograms, queue and KV-cache occupancy. A snapshot is copied out under the engine's lock.
#pragma once

#include <cstdint>
#include <vector>

namespace gufo::engine {

// Cumulative histogram with fixed upper bounds (seconds), as Prometheus expects.
struct Histogram {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;  // counts[i]: observations <= bounds[i]; one more for +Inf
  double sum = 0.0;
  uint64_t count = 0;

  explicit Histogram(std::vector<double> upper_bounds)
      : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}
  void observe(double value) {
    size_t i = 0;
    while (i < bounds.size() && value > bounds[i]) ++i;
    ++counts[i];
    sum += value;
    ++count;
  }
};

struct EngineStats {
  uint64_t requests_ok = 0;         // finished normally (stop or length)
  uint64_t requests_cancelled = 0;  // client gone or server shutting down
  uint64_t requests_failed = 0;
  uint64_t prompt_tokens = 0;  // of finished and running requests, as submitted
  uint64_t cached_prompt_tokens = 0;
  uint64_t completion_tokens = 0;
  uint64_t prefill_tokens = 0;  // tokens evaluated as prompt (recomputation included)
  uint64_t decode_tokens = 0;
  double prefill_seconds = 0.0;  // forward time, split by the rows of each kind
  double decode_seconds = 0.0;
  uint64_t preemptions = 0;
  uint64_t draft_steps = 0;      // speculative decoding: sequence steps that verified drafts,
  uint64_t drafted_tokens = 0;   // the draft tokens verified,
  uint64_t accepted_tokens = 0;  // and those kept
  double draft_seconds = 0.0;    // spent proposing them
  Histogram time_to_first_token{{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  Histogram inter_token_latency{{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}};
  int32_t running = 0;
  int32_t waiting = 0;
  int32_t kv_blocks_total = 0;
  int32_t kv_blocks_used = 0;
  int32_t kv_blocks_cached = 0;
};

}  // namespace gufo::engine
