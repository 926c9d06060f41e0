// Flags and model loading shared by `gufo run` and `gufo chat` (see generation_flags.h).
#include "cli/generation_flags.h"

#include <cstdio>
#include <random>
#include <string>

#include "cli/default_model.h"

namespace gufo::cli {

void add_sampler_flags(CLI::App& app, SamplerFlags& flags) {
  engine::SamplerParams& p = flags.params;
  app.add_option("--temp", p.temperature, "temperature (0: greedy)")->check(CLI::Range(0.0f, 1e6f));
  app.add_option("--top-k", p.top_k, "top-k (0: off)")->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", p.top_p, "top-p (1: off)")->check(CLI::PositiveNumber & CLI::Range(0.0f, 1.0f));
  app.add_option("--min-p", p.min_p, "min-p (0: off)")->check(CLI::Range(0.0f, 1.0f));
  app.add_option("--repeat-penalty", p.repeat_penalty, "repetition penalty (1: off)")
      ->check(CLI::PositiveNumber & CLI::Range(0.0f, 1e6f));
  app.add_option("--presence-penalty", p.presence_penalty, "presence penalty (0: off)")->check(CLI::Range(-2.0f, 2.0f));
  app.add_option("--frequency-penalty", p.frequency_penalty, "frequency penalty (0: off)")
      ->check(CLI::Range(-2.0f, 2.0f));
  app.add_option("--repeat-last-n", p.penalty_last_n, "tokens the penalties look back on")
      ->check(CLI::Range(0, 1 << 24));
  app.add_option("-s,--seed", flags.seed, "random seed (same seed, same output; default: a new one each run)");
  app.add_flag("-v,--verbose", flags.verbose, "print the seed and the backend on stderr");
}

void add_spec_flags(CLI::App& app, engine::SpecOptions& spec) {
  app.add_option_function<std::string>(
         "--spec",
         [&spec](const std::string& mode) {
           spec.mode = mode == "ngram" ? engine::SpecMode::Ngram : engine::SpecMode::None;
         },
         "speculative decoding: ngram (what followed the context's last tokens where they came before) or none "
         "(default); the output is the same either way")
      ->check(CLI::IsMember({"none", "ngram"}));
  app.add_option("--draft-max", spec.draft_max, "tokens proposed at most per step with --spec")
      ->check(CLI::Range(1, 64));
  app.add_option("--draft-min", spec.draft_min,
                 "tokens proposed at least per step with --spec where the lookup finds them (default 0: decode "
                 "plainly while verifying drafts costs more than it saves)")
      ->check(CLI::Range(0, 64));
  // NOTE(cli): an App holds one parse-complete callback; run and chat set no other.
  app.parse_complete_callback([&spec] {
    if (spec.draft_min > spec.draft_max) {
      throw CLI::ValidationError("--draft-min", std::to_string(spec.draft_min) + " is more than --draft-max (" +
                                                    std::to_string(spec.draft_max) + ")");
    }
  });
}

engine::SamplerParams resolve_sampler(const SamplerFlags& flags, const char* command) {
  engine::SamplerParams params = flags.params;
  params.seed = flags.seed ? *flags.seed : (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  if (flags.verbose) std::fprintf(stderr, "%s: seed %llu\n", command, static_cast<unsigned long long>(params.seed));
  return params;
}

Result<int64_t> context_size(std::optional<int64_t> flag, int64_t fallback, const engine::Model& model) {
  const int64_t trained = model.hparams().n_ctx_train;
  if (!flag) return std::min(fallback, trained);
  if (*flag > trained) {
    return Error{"-c/--ctx " + std::to_string(*flag) + " is beyond the model's training context (" +
                 std::to_string(trained) + " tokens)"};
  }
  return *flag;
}

Result<GenerationModel> load_generation_model(const std::string& model_path, ChosenBackend& chosen) {
  GUFO_ASSIGN_OR_RETURN(const std::string path, model_or_default(model_path));
  GenerationModel loaded;
  GUFO_ASSIGN_OR_RETURN(loaded.model, load_model(chosen, path));
  GUFO_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::load(loaded.model->file()));
  if (tok.vocab().n_vocab() > loaded.model->hparams().n_vocab) {
    return Error{path + ": the tokenizer has " + std::to_string(tok.vocab().n_vocab()) + " tokens but the model only " +
                 std::to_string(loaded.model->hparams().n_vocab)};
  }
  loaded.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  return loaded;
}

}  // namespace gufo::cli
