// Quality metrics (see quality.h).
#include "engine/quality.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "engine/validate_prefill.h"

namespace gufo::engine {

Result<QualityReport> measure_quality(std::span<const int32_t> tokens, std::span<const float> logits, int64_t n_vocab,
                                      const NpyMatrix* reference) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 2) return Error{"quality: need at least 2 tokens to score"};
  if (static_cast<int64_t>(logits.size()) != n * n_vocab) return Error{"quality: logits do not match the tokens"};
  if (reference != nullptr && (reference->rows != n || reference->cols != n_vocab)) {
    return Error{"reference logits are [" + std::to_string(reference->rows) + ", " + std::to_string(reference->cols) +
                 "], the model gives [" + std::to_string(n) + ", " + std::to_string(n_vocab) + "]"};
  }
  QualityReport report;
  report.n_tokens = n;
  report.n_scored = n - 1;
  double sum = 0.0;
  for (int64_t i = 0; i + 1 < n; ++i) {
    const std::span<const float> row = logits.subspan(static_cast<size_t>(i * n_vocab), static_cast<size_t>(n_vocab));
    const double max = *std::max_element(row.begin(), row.end());
    double z = 0.0;
    for (float x : row) z += std::exp(static_cast<double>(x) - max);
    const int32_t next = tokens[static_cast<size_t>(i + 1)];
    if (next < 0 || next >= n_vocab) return Error{"quality: token id " + std::to_string(next) + " out of range"};
    const double nll = -(static_cast<double>(row[static_cast<size_t>(next)]) - max - std::log(z));
    report.nll.push_back(nll);
    sum += nll;
  }
  report.mean_nll = sum / static_cast<double>(report.n_scored);
  report.perplexity = std::exp(report.mean_nll);
  if (reference != nullptr) {
    report.has_reference = true;
    std::vector<double> kls;
    int64_t same = 0;
    for (int64_t i = 0; i < n; ++i) {
      const std::span<const float> want(reference->data.data() + i * n_vocab, static_cast<size_t>(n_vocab));
      const std::span<const float> got = logits.subspan(static_cast<size_t>(i * n_vocab), static_cast<size_t>(n_vocab));
      kls.push_back(kl_divergence(want, got));
      same += std::max_element(want.begin(), want.end()) - want.begin() ==
              std::max_element(got.begin(), got.end()) - got.begin();
    }
    double kl_sum = 0.0;
    for (double kl : kls) kl_sum += kl;
    report.mean_kl = kl_sum / static_cast<double>(n);
    std::vector<double> sorted = kls;
    std::sort(sorted.begin(), sorted.end());
    // NOTE(quality): p99 as the nearest-rank percentile (ceil(0.99 n)-th smallest).
    const size_t rank = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));
    report.p99_kl = sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
    report.max_kl = sorted.back();
    report.top1_agreement = static_cast<double>(same) / static_cast<double>(n);
  }
  return report;
}

namespace {

// One object of limits; `where` prefixes errors ("L.json" or "L.json: model.gguf").
Result<QualityLimits> parse_limits(const std::string& where, const nlohmann::json& json) {
  QualityLimits limits;
  for (const auto& [key, value] : json.items()) {
    if (key == "note" && value.is_string()) continue;  // a comment, e.g. how the limits were set
    if (!value.is_number()) return Error{where + ": " + key + ": expected a number"};
    const double v = value.get<double>();
    if (key == "max_mean_kl")
      limits.max_mean_kl = v;
    else if (key == "max_p99_kl")
      limits.max_p99_kl = v;
    else if (key == "max_kl")
      limits.max_kl = v;
    else if (key == "min_top1")
      limits.min_top1 = v;
    else if (key == "max_perplexity")
      limits.max_perplexity = v;
    else
      return Error{where + ": unknown limit '" + key + "' (max_mean_kl, max_p99_kl, max_kl, min_top1, max_perplexity)"};
  }
  return limits;
}

}  // namespace

Result<QualityLimits> read_limits(const std::string& path, const std::string& model_file) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open"};
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return Error{path + ": expected a JSON object of limits"};
  bool per_model = false;
  for (const auto& [key, value] : json.items()) per_model = per_model || value.is_object();
  if (!per_model) return parse_limits(path, json);
  // A table of limits per model file, keyed by the file's name (models/limits.json).
  const std::string name = std::filesystem::path(model_file).filename().string();
  if (!json.contains(name) || !json[name].is_object()) {
    return Error{path + ": no limits for model file '" + name + "'"};
  }
  return parse_limits(path + ": " + name, json[name]);
}

std::optional<std::string> check_limits(const QualityReport& r, const QualityLimits& l) {
  auto over = [](const char* name, double value, double limit) {
    return std::string(name) + " " + std::to_string(value) + " exceeds the limit " + std::to_string(limit);
  };
  // NOTE(quality): NaN compares false with everything, so it must be refused by name (a
  // miscompiled kernel's NaN would otherwise pass every limit).
  for (const double v : {r.perplexity, r.mean_kl, r.p99_kl, r.max_kl, r.top1_agreement}) {
    if (std::isnan(v)) return std::string("the measurements hold NaN (perplexity, KL or top-1)");
  }
  if (l.max_perplexity && r.perplexity > *l.max_perplexity) return over("perplexity", r.perplexity, *l.max_perplexity);
  if (r.has_reference) {
    if (l.max_mean_kl && r.mean_kl > *l.max_mean_kl) return over("mean KL", r.mean_kl, *l.max_mean_kl);
    if (l.max_p99_kl && r.p99_kl > *l.max_p99_kl) return over("p99 KL", r.p99_kl, *l.max_p99_kl);
    if (l.max_kl && r.max_kl > *l.max_kl) return over("max KL", r.max_kl, *l.max_kl);
    if (l.min_top1 && r.top1_agreement < *l.min_top1) {
      return "top-1 agreement " + std::to_string(r.top1_agreement) + " is below the limit " +
             std::to_string(*l.min_top1);
    }
  } else if (l.max_mean_kl || l.max_p99_kl || l.max_kl || l.min_top1) {
    return std::string("KL and top-1 limits need --reference");
  }
  return std::nullopt;
}

}  // namespace gufo::engine
