// Quality metrics of a model on a token sequence: per-position NLL of the next token,
// perplexity, and against reference logits (another build, or transformers): KL(reference ‖
// model) mean / p99 / max and top-1 agreement. Used by `gufo quality`.
// Tested by tests/unit/engine/quality_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/npy.h"
#include "core/result.h"

namespace gufo::engine {

struct QualityReport {
  int64_t n_tokens = 0;
  int64_t n_scored = 0;     // positions with a next token (n_tokens - 1)
  double mean_nll = 0.0;    // nats per token
  double perplexity = 0.0;  // exp(mean_nll)
  std::vector<double> nll;  // [n_scored]
  bool has_reference = false;
  double mean_kl = 0.0;
  double p99_kl = 0.0;
  double max_kl = 0.0;
  double top1_agreement = 0.0;  // fraction of positions whose argmax matches the reference
};

// logits: [tokens.size(), n_vocab]; reference (optional): the same shape.
Result<QualityReport> measure_quality(std::span<const int32_t> tokens, std::span<const float> logits, int64_t n_vocab,
                                      const NpyMatrix* reference);

// Limits from a JSON file: {"max_mean_kl": .., "max_p99_kl": .., "max_kl": ..,
// "min_top1": .., "max_perplexity": ..}, any subset; unknown keys are an error.
struct QualityLimits {
  std::optional<double> max_mean_kl, max_p99_kl, max_kl, min_top1, max_perplexity;
};
// A JSON object of limits, or a table of such objects keyed by model file name (the entry for
// `model_file`'s name is used). A string "note" is allowed beside the limits.
Result<QualityLimits> read_limits(const std::string& path, const std::string& model_file = "");
// The first limit the report breaks, as one line, or nothing.
std::optional<std::string> check_limits(const QualityReport& report, const QualityLimits& limits);

}  // namespace gufo::engine
