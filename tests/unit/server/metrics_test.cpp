// render_metrics: Prometheus text format 0.0.4 with HELP and TYPE for every family (once,
// whatever the number of models), one series per model labelled with its id (escaped),
// cumulative histogram buckets ending in +Inf, ratios that are 0 (not NaN) before any work,
// and the HTTP counters labelled by route and status.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "server/metrics.h"

namespace gufo::server {
namespace {

std::map<std::string, std::string> samples(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    out[line.substr(0, space)] = line.substr(space + 1);
  }
  return out;
}

TEST(Metrics, HistogramsAreCumulativeAndEndInInf) {
  engine::EngineStats stats;
  stats.time_to_first_token.observe(0.07);
  stats.time_to_first_token.observe(0.3);
  stats.time_to_first_token.observe(100.0);
  const std::vector<ModelStats> models = {{.model = "m", .stats = stats}};
  const auto m = samples(render_metrics(models, {}));
  EXPECT_EQ(m.at("gufo_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.05\"}"), "0");
  EXPECT_EQ(m.at("gufo_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.1\"}"), "1");
  EXPECT_EQ(m.at("gufo_time_to_first_token_seconds_bucket{model=\"m\",le=\"0.5\"}"), "2");
  EXPECT_EQ(m.at("gufo_time_to_first_token_seconds_bucket{model=\"m\",le=\"60\"}"), "2");
  EXPECT_EQ(m.at("gufo_time_to_first_token_seconds_bucket{model=\"m\",le=\"+Inf\"}"), "3");
  EXPECT_EQ(m.at("gufo_time_to_first_token_seconds_count{model=\"m\"}"), "3");
  EXPECT_DOUBLE_EQ(std::stod(m.at("gufo_time_to_first_token_seconds_sum{model=\"m\"}")), 100.37);
}

TEST(Metrics, EveryFamilyHasHelpAndTypeAndRatiosStartAtZero) {
  const std::vector<ModelStats> models = {{.model = "a", .stats = {}}, {.model = "b", .stats = {}}};
  const std::string text = render_metrics(models, {{{"/v1/chat/completions", 429}, 3}});
  const auto m = samples(text);
  EXPECT_EQ(m.at("gufo_http_requests_total{route=\"/v1/chat/completions\",status=\"429\"}"), "3");
  EXPECT_EQ(m.at("gufo_kv_cache_usage_ratio{model=\"a\"}"), "0");
  EXPECT_EQ(m.at("gufo_prefix_cache_hit_ratio{model=\"b\"}"), "0");
  EXPECT_EQ(m.at("gufo_decode_tokens_per_second{model=\"a\"}"), "0");
  // Each family's HELP and TYPE come once, before its samples, whatever the number of models.
  size_t at = 0;
  int types = 0;
  while ((at = text.find("# TYPE gufo_running_sequences ", at)) != std::string::npos) ++types, ++at;
  EXPECT_EQ(types, 1);
  for (const auto& [name, value] : m) {
    const std::string family = name.substr(0, name.find('{'));
    std::string base = family;
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      if (base.size() > std::string(suffix).size() && base.ends_with(suffix) &&
          text.find("# TYPE " + base.substr(0, base.size() - std::string(suffix).size()) + " histogram") !=
              std::string::npos) {
        base = base.substr(0, base.size() - std::string(suffix).size());
      }
    }
    EXPECT_NE(text.find("# HELP " + base + " "), std::string::npos) << base;
    EXPECT_NE(text.find("# TYPE " + base + " "), std::string::npos) << base;
    EXPECT_NE(value, "nan") << name;
  }
}

TEST(Metrics, RatiosFollowTheCounts) {
  engine::EngineStats stats;
  stats.prompt_tokens = 200;
  stats.cached_prompt_tokens = 50;
  stats.kv_blocks_total = 8;
  stats.kv_blocks_used = 2;
  stats.decode_tokens = 30;
  stats.decode_seconds = 1.5;
  const std::vector<ModelStats> models = {{.model = "m", .stats = stats}};
  const auto m = samples(render_metrics(models, {}));
  EXPECT_DOUBLE_EQ(std::stod(m.at("gufo_prefix_cache_hit_ratio{model=\"m\"}")), 0.25);
  EXPECT_DOUBLE_EQ(std::stod(m.at("gufo_kv_cache_usage_ratio{model=\"m\"}")), 0.25);
  EXPECT_DOUBLE_EQ(std::stod(m.at("gufo_decode_tokens_per_second{model=\"m\"}")), 20.0);
  EXPECT_EQ(m.at("gufo_draft_acceptance_ratio{model=\"m\",drafter=\"ngram\"}"), "0");
  stats.draft_steps = 4;
  stats.drafted_tokens = 20;
  stats.accepted_tokens = 6;
  const std::vector<ModelStats> drafting = {{.model = "m", .stats = stats}};
  const auto d = samples(render_metrics(drafting, {}));
  EXPECT_EQ(d.at("gufo_draft_tokens_total{model=\"m\",drafter=\"ngram\"}"), "20");
  EXPECT_DOUBLE_EQ(std::stod(d.at("gufo_draft_acceptance_ratio{model=\"m\",drafter=\"ngram\"}")), 0.3);
  EXPECT_DOUBLE_EQ(std::stod(d.at("gufo_draft_accepted_length_mean{model=\"m\",drafter=\"ngram\"}")), 1.5);
}

TEST(Metrics, EachModelHasItsOwnSeriesWithItsIdEscaped) {
  engine::EngineStats busy;
  busy.requests_ok = 7;
  busy.running = 2;
  const std::vector<ModelStats> models = {{.model = "idle", .stats = {}}, {.model = "q\"x\\y\nz", .stats = busy}};
  const auto m = samples(render_metrics(models, {}));
  EXPECT_EQ(m.at("gufo_requests_total{model=\"idle\",outcome=\"ok\"}"), "0");
  EXPECT_EQ(m.at("gufo_requests_total{model=\"q\\\"x\\\\y\\nz\",outcome=\"ok\"}"), "7");
  EXPECT_EQ(m.at("gufo_running_sequences{model=\"q\\\"x\\\\y\\nz\"}"), "2");
  // No models loaded (still loading): the families are there, without samples.
  const std::string empty = render_metrics({}, {});
  EXPECT_NE(empty.find("# TYPE gufo_requests_total counter"), std::string::npos);
  EXPECT_TRUE(samples(empty).empty());
}

}  // namespace
}  // namespace gufo::server
