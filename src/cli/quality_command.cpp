// `gufo quality -m M.gguf --text F [--save-logits R.npy | --reference R.npy [--limits L.json]]`:
// the text's tokens evaluated in one pass; per-position NLL, perplexity and, against saved
// reference logits (R.npy [n_tokens, n_vocab] float32 with the ids in R.tokens.json beside
// it), KL(reference ‖ model) mean / p99 / max and top-1 agreement. --limits exits 1 when a
// limit is broken. Tested by tests/unit/engine/quality_test.cpp.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "cli/backend_flags.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "core/npy.h"
#include "engine/model.h"
#include "engine/quality.h"
#include "engine/validate_prefill.h"
#include "tokenizer/tokenizer.h"

namespace gufo::cli {

namespace {

struct QualityOptions {
  std::string model_path;
  std::string text_path;
  std::string save_logits;
  std::string reference;
  std::string limits;
  BackendFlags backend;
  bool json = false;
  bool validate_prefill = false;
};

std::string tokens_path(const std::string& npy_path) {
  const std::string stem =
      npy_path.size() > 4 && npy_path.ends_with(".npy") ? npy_path.substr(0, npy_path.size() - 4) : npy_path;
  return stem + ".tokens.json";
}

Result<std::vector<int32_t>> read_tokens(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open (the token ids of the reference logits)"};
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object() || !json.contains("tokens") || !json["tokens"].is_array()) {
    return Error{path + ": expected {\"tokens\": [ids...]}"};
  }
  std::vector<int32_t> tokens;
  for (const auto& id : json["tokens"]) {
    if (!id.is_number_integer()) return Error{path + ": tokens: expected integers"};
    tokens.push_back(id.get<int32_t>());
  }
  return tokens;
}

Status write_tokens(const std::string& path, const std::vector<int32_t>& tokens) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << nlohmann::json{{"tokens", tokens}}.dump() << '\n';
    if (!out) return Error{path + ": cannot write"};
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return Error{path + ": cannot write"};
  return {};
}

int run_quality(const QualityOptions& options) {
  auto model_path = model_or_default(options.model_path);
  if (!model_path.ok()) return report_error(model_path.error());
  QualityOptions o = options;
  o.model_path = *model_path;
  if (!o.save_logits.empty() && !o.reference.empty()) {
    return report_error(Error{"quality: --save-logits and --reference exclude each other"});
  }
  std::ifstream text_in(o.text_path, std::ios::binary);
  if (!text_in) return report_error(Error{o.text_path + ": cannot open"});
  const std::string text((std::istreambuf_iterator<char>(text_in)), std::istreambuf_iterator<char>());

  std::optional<engine::QualityLimits> limits;
  if (!o.limits.empty()) {
    auto read = engine::read_limits(o.limits, o.model_path);
    if (!read.ok()) return report_error(read.error());
    limits = *read;
  }
  auto chosen = make_backend(o.backend, "quality");
  if (!chosen.ok()) return report_error(chosen.error());
  auto model = load_model(*chosen, o.model_path);
  backend::Backend& backend = *chosen->backend;  // after loading: auto may have fallen back
  if (!model.ok()) return report_error(model.error());
  auto tok = tokenizer::Tokenizer::load((*model)->file());
  if (!tok.ok()) return report_error(tok.error());
  std::vector<int32_t> tokens;
  if (tok->vocab().add_bos) tokens.push_back(tok->vocab().bos_id);
  const std::vector<int32_t> body = tok->encode(text, /*parse_special=*/false);
  tokens.insert(tokens.end(), body.begin(), body.end());
  if (tokens.size() < 2) return report_error(Error{o.text_path + ": the text has fewer than 2 tokens"});
  if (static_cast<int64_t>(tokens.size()) > (*model)->hparams().n_ctx_train) {
    return report_error(Error{o.text_path + ": " + std::to_string(tokens.size()) +
                              " tokens exceed the model's context of " +
                              std::to_string((*model)->hparams().n_ctx_train)});
  }

  std::optional<NpyMatrix> reference;
  if (!o.reference.empty()) {
    auto ref = read_npy(o.reference);
    if (!ref.ok()) return report_error(ref.error());
    auto ref_tokens = read_tokens(tokens_path(o.reference));
    if (!ref_tokens.ok()) return report_error(ref_tokens.error());
    if (*ref_tokens != tokens) {
      return report_error(Error{tokens_path(o.reference) + ": the reference was made from other tokens than " +
                                o.text_path + " gives with this model's tokenizer"});
    }
    reference = std::move(*ref);
  }
  if (o.validate_prefill) {
    auto report = engine::validate_prefill(**model, backend, tokens, chosen->cache_type);
    if (!report.ok()) return report_error(report.error());
    if (!report->ok) {
      return report_error(
          Error{"validate-prefill: batch prefill differs from token-by-token decoding beyond the limits"});
    }
  }

  auto session = engine::Session::create(**model, backend, static_cast<int64_t>(tokens.size()), chosen->cache_type);
  if (!session.ok()) return report_error(session.error());
  auto logits = session->eval(tokens, /*all_logits=*/true);
  if (!logits.ok()) return report_error(logits.error());
  const int64_t n_vocab = (*model)->hparams().n_vocab;
  if (!o.save_logits.empty()) {
    NpyMatrix out{static_cast<int64_t>(tokens.size()), n_vocab, *logits};
    if (Status s = write_npy(o.save_logits, out); !s.ok()) return report_error(s.error());
    if (Status s = write_tokens(tokens_path(o.save_logits), tokens); !s.ok()) return report_error(s.error());
  }
  auto report = engine::measure_quality(tokens, *logits, n_vocab, reference ? &*reference : nullptr);
  if (!report.ok()) return report_error(report.error());

  if (o.json) {
    nlohmann::json j{{"model", o.model_path},
                     {"text", o.text_path},
                     {"n_tokens", report->n_tokens},
                     {"mean_nll", report->mean_nll},
                     {"perplexity", report->perplexity},
                     {"nll", report->nll}};
    if (report->has_reference) {
      j["reference"] = o.reference;
      j["kl"] = {{"mean", report->mean_kl}, {"p99", report->p99_kl}, {"max", report->max_kl}};
      j["top1_agreement"] = report->top1_agreement;
    }
    std::cout << j.dump(2) << '\n';
  } else {
    std::printf("tokens      %lld (%lld scored)\n", static_cast<long long>(report->n_tokens),
                static_cast<long long>(report->n_scored));
    std::printf("mean NLL    %.6f nats\nperplexity  %.4f\n", report->mean_nll, report->perplexity);
    if (report->has_reference) {
      std::printf("KL          mean %.6e  p99 %.6e  max %.6e\n", report->mean_kl, report->p99_kl, report->max_kl);
      std::printf("top-1       %.4f\n", report->top1_agreement);
    }
  }
  if (limits) {
    if (auto broken = engine::check_limits(*report, *limits)) return report_error(Error{o.limits + ": " + *broken});
    std::fprintf(stderr, "gufo quality: limits: ok (%s)\n", o.limits.c_str());
  }
  return 0;
}

}  // namespace

Command register_quality(CLI::App& root) {
  auto o = std::make_shared<QualityOptions>();
  CLI::App* app = root.add_subcommand("quality", "Perplexity and KL against reference logits on a text");
  app->add_option("-m,--model", o->model_path,
                  "a GGUF model "
                  "(default: the shipped gufo-tiny; $GUFO_MODEL, $GUFO_MODELS_DIR)");
  app->add_option("--text", o->text_path, "the text file to evaluate")->required();
  app->add_option("--save-logits", o->save_logits, "write the logits as R.npy (and R.tokens.json)");
  app->add_option("--reference", o->reference, "compare with reference logits R.npy (ids in R.tokens.json)");
  app->add_option("--limits", o->limits, "JSON limits; exit 1 when one is exceeded");
  add_backend_flags(*app, o->backend);
  app->add_flag("--json", o->json, "print the report as JSON");
  app->add_flag("--validate-prefill", o->validate_prefill, "check batch prefill against token-by-token decoding");
  return Command{app, [o] { return run_quality(*o); }};
}

}  // namespace gufo::cli
