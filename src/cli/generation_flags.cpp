// Flags and model loading shared by `gufo run` and `gufo chat` (see generation_flags.h).
#include "cli/generation_flags.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>

#include "cli/default_model.h"
#include "diagnose/build_info.h"

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

void add_spec_flags(CLI::App& app, SpecFlags& flags) {
  engine::SpecOptions& spec = flags.spec;
  CLI::Option* mode = app.add_option_function<std::string>(
                             "--spec", [&spec](const std::string& name) { spec.mode = *engine::spec_mode_named(name); },
                             "speculative decoding: ngram (what followed the context's last tokens where they came "
                             "before), draft (a smaller model's greedy tokens: --draft-model) or none (default); the "
                             "output is the same either way")
                          ->check(CLI::IsMember({"none", "ngram", "draft"}));
  app.add_option("--draft-model", flags.draft_model,
                 "a draft model (GGUF, the same vocabulary, e.g. gufo-tiny-draft for gufo-tiny): --spec draft")
      ->check(CLI::ExistingFile);
  app.add_option("--draft-max", spec.draft_max, "tokens proposed at most per step with --spec")
      ->check(CLI::Range(1, 64));
  app.add_option("--draft-min", spec.draft_min,
                 "tokens proposed at least per step with --spec where the drafter finds them (default 0: decode "
                 "plainly while verifying drafts costs more than it saves)")
      ->check(CLI::Range(0, 64));
  // NOTE(cli): an App holds one parse-complete callback; run and chat set no other.
  app.parse_complete_callback([&flags, mode] {
    engine::SpecOptions& s = flags.spec;
    if (s.draft_min > s.draft_max) {
      throw CLI::ValidationError("--draft-min", std::to_string(s.draft_min) + " is more than --draft-max (" +
                                                    std::to_string(s.draft_max) + ")");
    }
    if (!flags.draft_model.empty()) {
      if (mode->count() > 0 && s.mode != engine::SpecMode::Draft) {
        throw CLI::ValidationError("--draft-model", "drafts with a model, which --spec " +
                                                        std::string(engine::spec_mode_name(s.mode)) + " does not");
      }
      s.mode = engine::SpecMode::Draft;
    } else if (s.mode == engine::SpecMode::Draft) {
      throw CLI::ValidationError("--spec", "draft needs --draft-model FILE");
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

Result<GenerationModel> load_generation_model(const std::string& model_path, ChosenBackend& chosen,
                                              bool may_fall_back) {
  GUFO_ASSIGN_OR_RETURN(const std::string path, model_or_default(model_path));
  GenerationModel loaded;
  GUFO_ASSIGN_OR_RETURN(loaded.model, load_model(chosen, path, may_fall_back));
  GUFO_ASSIGN_OR_RETURN(tokenizer::Tokenizer tok, tokenizer::Tokenizer::load(loaded.model->file()));
  if (tok.vocab().n_vocab() > loaded.model->hparams().n_vocab) {
    return Error{path + ": the tokenizer has " + std::to_string(tok.vocab().n_vocab()) + " tokens but the model only " +
                 std::to_string(loaded.model->hparams().n_vocab)};
  }
  loaded.tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok));
  return loaded;
}

Result<std::unique_ptr<LoadedDraft>> load_draft(const SpecFlags& flags, ChosenBackend& chosen,
                                                const tokenizer::Tokenizer& target, int64_t n_ctx) {
  if (flags.spec.mode != engine::SpecMode::Draft) return std::unique_ptr<LoadedDraft>();
  auto draft = std::make_unique<LoadedDraft>();
  // NOTE(cli): never --device auto's fallback here: it would replace the backend that the model
  // is already loaded on. A draft the GPU cannot hold is an error of its own.
  auto loaded = load_generation_model(flags.draft_model, chosen, /*may_fall_back=*/false);
  if (!loaded.ok()) return Error{"--draft-model: " + loaded.error().message, loaded.error().kind};
  draft->loaded = std::move(loaded).value();
  GUFO_RETURN_IF_ERROR(engine::check_draft_vocab(target.vocab(), draft->loaded.tokenizer->vocab(),
                                                 "--draft-model " + flags.draft_model));
  const int64_t trained = draft->loaded.model->hparams().n_ctx_train;
  const int64_t size = trained > 0 ? std::min(n_ctx, trained) : n_ctx;
  GUFO_ASSIGN_OR_RETURN(engine::Session session,
                        engine::Session::create(*draft->loaded.model, *chosen.backend, size, chosen.cache_type));
  draft->session = std::make_unique<engine::Session>(std::move(session));
  draft->drafter = std::make_unique<engine::ModelDrafter>(*draft->session);
  return draft;
}

engine::SessionIdentity session_identity(const engine::Model& model, const backend::Backend& backend) {
  const diagnose::BuildInfo& build = diagnose::build_info();
  return {.model = engine::model_identity(model.file()),
          .build = "gufo " + std::string(build.version) + " (" + std::string(build.git_revision) + ") " +
                   backend.capabilities().numerics};
}

}  // namespace gufo::cli
