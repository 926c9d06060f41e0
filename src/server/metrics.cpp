// render_metrics (see metrics.h).
#include "server/metrics.h"

#include <fmt/format.h>

namespace gufo::server {

namespace {

void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void histogram(std::string& out, const char* name, const char* help, const engine::Histogram& h) {
  metric(out, name, "histogram", help);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, h.bounds[i], cumulative);
  }
  cumulative += h.counts.back();
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, cumulative, name, h.sum, name,
                     h.count);
}

}  // namespace

std::string render_metrics(const engine::EngineStats& s, const std::map<std::pair<std::string, int>, uint64_t>& http) {
  std::string out;
  // One unlabelled sample.
  const auto sample = [&out](const char* name, const char* type, const char* help, auto value) {
    metric(out, name, type, help);
    out += fmt::format("{} {}\n", name, value);
  };
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  metric(out, "gufo_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
  for (const auto& [key, count] : http) {
    out += fmt::format("gufo_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, count);
  }
  metric(out, "gufo_requests_total", "counter", "Generations finished, by outcome.");
  out += fmt::format("gufo_requests_total{{outcome=\"ok\"}} {}\n", s.requests_ok);
  out += fmt::format("gufo_requests_total{{outcome=\"cancelled\"}} {}\n", s.requests_cancelled);
  out += fmt::format("gufo_requests_total{{outcome=\"failed\"}} {}\n", s.requests_failed);
  sample("gufo_prompt_tokens_total", "counter", "Prompt tokens of accepted generations.", s.prompt_tokens);
  sample("gufo_prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache.",
         s.cached_prompt_tokens);
  sample("gufo_completion_tokens_total", "counter", "Tokens generated.", s.completion_tokens);
  sample("gufo_prefill_tokens_total", "counter", "Tokens evaluated as prompt (recomputation included).",
         s.prefill_tokens);
  sample("gufo_decode_tokens_total", "counter", "Tokens evaluated one per sequence per step.", s.decode_tokens);
  sample("gufo_prefill_seconds_total", "counter", "Forward time spent on prompt tokens.", s.prefill_seconds);
  sample("gufo_decode_seconds_total", "counter", "Forward time spent on decode tokens.", s.decode_seconds);
  sample("gufo_prefill_tokens_per_second", "gauge", "Prompt tokens per second of forward time, since start.",
         ratio(static_cast<double>(s.prefill_tokens), s.prefill_seconds));
  sample("gufo_decode_tokens_per_second", "gauge", "Decode tokens per second of forward time, since start.",
         ratio(static_cast<double>(s.decode_tokens), s.decode_seconds));
  histogram(out, "gufo_time_to_first_token_seconds", "From request arrival to its first generated token.",
            s.time_to_first_token);
  histogram(out, "gufo_inter_token_latency_seconds", "Between consecutive tokens of one sequence.",
            s.inter_token_latency);
  sample("gufo_preemptions_total", "counter", "Sequences preempted for lack of KV blocks (recomputed later).",
         s.preemptions);
  sample("gufo_running_sequences", "gauge", "Sequences in the running batch.", s.running);
  sample("gufo_queue_depth", "gauge", "Sequences waiting to run.", s.waiting);
  sample("gufo_kv_cache_blocks", "gauge", "KV-cache blocks in the pool.", s.kv_blocks_total);
  sample("gufo_kv_cache_usage_ratio", "gauge", "Fraction of KV-cache blocks held by sequences.",
         ratio(s.kv_blocks_used, s.kv_blocks_total));
  sample("gufo_kv_cache_cached_blocks", "gauge", "Blocks known to the prefix cache.", s.kv_blocks_cached);
  sample("gufo_prefix_cache_hit_ratio", "gauge", "Prompt tokens served from the prefix cache / prompt tokens.",
         ratio(static_cast<double>(s.cached_prompt_tokens), static_cast<double>(s.prompt_tokens)));
  return out;
}

}  // namespace gufo::server
