// render_metrics (see metrics.h).
#include "server/metrics.h"

#include <fmt/format.h>

namespace gufo::server {

namespace {

// A label value as the text format wants it: backslash, double quote and newline escaped.
std::string label_value(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

template <class HistogramOf>
void histogram(std::string& out, const char* name, const char* help, std::span<const ModelStats> models,
               HistogramOf histogram_of) {
  metric(out, name, "histogram", help);
  for (const ModelStats& m : models) {
    const engine::Histogram& h = histogram_of(m.stats);
    const std::string model = label_value(m.model);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      out += fmt::format("{}_bucket{{model=\"{}\",le=\"{}\"}} {}\n", name, model, h.bounds[i], cumulative);
    }
    cumulative += h.counts.back();
    out += fmt::format(
        "{}_bucket{{model=\"{}\",le=\"+Inf\"}} {}\n{}_sum{{model=\"{}\"}} "
        "{}\n{}_count{{model=\"{}\"}} {}\n",
        name, model, cumulative, name, model, h.sum, name, model, h.count);
  }
}

}  // namespace

std::string render_metrics(std::span<const ModelStats> models,
                           const std::map<std::pair<std::string, int>, uint64_t>& http) {
  std::string out;
  metric(out, "gufo_http_requests_total", "counter", "HTTP requests answered, by route and status code.");
  for (const auto& [key, count] : http) {
    out += fmt::format("gufo_http_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", label_value(key.first),
                       key.second, count);
  }
  // One sample per loaded model, labelled with its id.
  const auto family = [&](const char* name, const char* type, const char* help, auto value_of) {
    metric(out, name, type, help);
    for (const ModelStats& m : models)
      out += fmt::format("{}{{model=\"{}\"}} {}\n", name, label_value(m.model), value_of(m.stats));
  };
  const auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
  metric(out, "gufo_requests_total", "counter", "Generations and embeddings finished, by outcome.");
  for (const ModelStats& m : models) {
    const std::string model = label_value(m.model);
    out += fmt::format("gufo_requests_total{{model=\"{}\",outcome=\"ok\"}} {}\n", model, m.stats.requests_ok);
    out += fmt::format("gufo_requests_total{{model=\"{}\",outcome=\"cancelled\"}} {}\n", model,
                       m.stats.requests_cancelled);
    out += fmt::format("gufo_requests_total{{model=\"{}\",outcome=\"failed\"}} {}\n", model, m.stats.requests_failed);
  }
  using S = const engine::EngineStats&;
  family("gufo_prompt_tokens_total", "counter", "Prompt tokens of accepted requests.",
         [](S s) { return s.prompt_tokens; });
  family("gufo_prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache.",
         [](S s) { return s.cached_prompt_tokens; });
  family("gufo_completion_tokens_total", "counter", "Tokens generated.", [](S s) { return s.completion_tokens; });
  family("gufo_prefill_tokens_total", "counter", "Tokens evaluated as prompt (recomputation included).",
         [](S s) { return s.prefill_tokens; });
  family("gufo_decode_tokens_total", "counter", "Tokens evaluated after the prompt (verified drafts included).",
         [](S s) { return s.decode_tokens; });
  family("gufo_prefill_seconds_total", "counter", "Forward time spent on prompt tokens.",
         [](S s) { return s.prefill_seconds; });
  family("gufo_decode_seconds_total", "counter", "Forward time spent on decode tokens.",
         [](S s) { return s.decode_seconds; });
  family("gufo_prefill_tokens_per_second", "gauge", "Prompt tokens per second of forward time, since start.",
         [&](S s) { return ratio(static_cast<double>(s.prefill_tokens), s.prefill_seconds); });
  family("gufo_decode_tokens_per_second", "gauge", "Decode tokens per second of forward time, since start.",
         [&](S s) { return ratio(static_cast<double>(s.decode_tokens), s.decode_seconds); });
  histogram(out, "gufo_time_to_first_token_seconds", "From request arrival to its first generated token.", models,
            [](S s) -> const engine::Histogram& { return s.time_to_first_token; });
  histogram(out, "gufo_inter_token_latency_seconds", "Between consecutive tokens of one sequence.", models,
            [](S s) -> const engine::Histogram& { return s.inter_token_latency; });
  // Speculative decoding; the serving engine drafts by prompt lookup only (drafter="ngram").
  const auto drafter = [&](const char* name, const char* type, const char* help, auto value_of) {
    metric(out, name, type, help);
    for (const ModelStats& m : models)
      out += fmt::format("{}{{model=\"{}\",drafter=\"ngram\"}} {}\n", name, label_value(m.model), value_of(m.stats));
  };
  drafter("gufo_draft_tokens_total", "counter", "Draft tokens verified.", [](S s) { return s.drafted_tokens; });
  drafter("gufo_draft_tokens_accepted_total", "counter", "Draft tokens kept (the same as the target's).",
          [](S s) { return s.accepted_tokens; });
  drafter("gufo_draft_acceptance_ratio", "gauge", "Draft tokens kept of those verified, since start.",
          [&](S s) { return ratio(static_cast<double>(s.accepted_tokens), static_cast<double>(s.drafted_tokens)); });
  drafter("gufo_draft_accepted_length_mean", "gauge", "Draft tokens kept per step that verified drafts, since start.",
          [&](S s) { return ratio(static_cast<double>(s.accepted_tokens), static_cast<double>(s.draft_steps)); });
  drafter("gufo_draft_seconds_total", "counter", "Time spent proposing drafts (shadow lookups included).",
          [](S s) { return s.draft_seconds; });
  family("gufo_preemptions_total", "counter", "Sequences preempted for lack of KV blocks (recomputed later).",
         [](S s) { return s.preemptions; });
  family("gufo_running_sequences", "gauge", "Sequences in the running batch.", [](S s) { return s.running; });
  family("gufo_queue_depth", "gauge", "Sequences waiting to run.", [](S s) { return s.waiting; });
  family("gufo_kv_cache_blocks", "gauge", "KV-cache blocks in the pool.", [](S s) { return s.kv_blocks_total; });
  family("gufo_kv_cache_usage_ratio", "gauge", "Fraction of KV-cache blocks held by sequences.",
         [&](S s) { return ratio(s.kv_blocks_used, s.kv_blocks_total); });
  family("gufo_kv_cache_cached_blocks", "gauge", "Blocks known to the prefix cache.",
         [](S s) { return s.kv_blocks_cached; });
  family("gufo_prefix_cache_hit_ratio", "gauge", "Prompt tokens served from the prefix cache / prompt tokens.",
         [&](S s) { return ratio(static_cast<double>(s.cached_prompt_tokens), static_cast<double>(s.prompt_tokens)); });
  return out;
}

}  // namespace gufo::server
