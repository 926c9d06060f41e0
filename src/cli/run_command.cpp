// `gufo run -m M.gguf -p PROMPT [-n N] [--temp T] [--seed S] [--validate-prefill] ...`: the
// prompt as raw text (control tokens such as <|im_start|> parsed), generation streamed to
// stdout. --validate-prefill first checks batch prefill against token-by-token decoding.
// --session FILE: when FILE exists, the run continues the saved one (its keys and values
// reused; -p, if given, appended to its context); either way FILE holds this run at the end
// (engine/session_file.h). Tested by tests/unit/engine/cli_test.cpp.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/backend_flags.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/read_file.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/validate_prefill.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "tokenizer/tokenizer.h"

namespace gufo::cli {

namespace {

struct RunOptions {
  std::string model_path;
  std::string prompt;
  int32_t n_predict = 128;
  std::optional<int64_t> n_ctx;  // unset: min(4096, the model's)
  BackendFlags backend;
  std::vector<std::string> stop;
  bool validate_prefill = false;
  SamplerFlags sampler;
  SpecFlags spec;
  std::string grammar_path;      // GBNF: only what it allows is generated
  std::string json_schema_path;  // or a JSON Schema: only JSON it accepts
  std::string session_path;      // --session: resumed when it exists, saved at the end
};

// What a run evaluates and continues from: on a fresh run the prompt (with BOS); on a resumed
// session the saved tokens past its cache, then the prompt (no BOS).
struct RunContext {
  std::vector<int32_t> earlier;  // already in the KV cache (a resumed session's)
  std::vector<int32_t> prompt;   // to evaluate
  std::string generator;         // a resumed sampler generator ("": from the seed)
};

// Restores --session FILE into `session` (checked against this model and build): the context
// past its cache to evaluate again, its generator. A run that ended (an end token, a stop
// string) goes on only from new text (`appending`); a chat's file is gufo chat's to continue.
Result<RunContext> resumed_context(const RunOptions& options, const engine::SessionIdentity& identity,
                                   engine::Session& session, bool appending) {
  const std::string& path = options.session_path;
  GUFO_ASSIGN_OR_RETURN(engine::LoadedSession loaded, engine::load_session(path, session, identity));
  const auto note = nlohmann::json::parse(loaded.state.note, nullptr, /*allow_exceptions=*/false);
  const std::string stop = note.is_object() && note.contains("stop") && note["stop"].is_string() ? note["stop"] : "";
  Status usable;
  if (note.is_object() && note.contains("messages")) {
    usable = Error{path + ": a chat session (gufo chat --session continues it)"};
  } else if ((stop == "eog" || stop == "stop") && !appending) {
    usable = Error{path + ": the saved run ended (" + (stop == "eog" ? "an end-of-generation token" : "a stop string") +
                   "); -p gives it text to continue from"};
  } else if (!options.grammar_path.empty() || !options.json_schema_path.empty()) {
    usable = Error{path + ": a constrained run is not resumed (the grammar would start over mid-answer)"};
  }
  if (!usable.ok()) {
    session.rewind(0);
    return usable.error();
  }
  RunContext context;
  const std::vector<int32_t>& tokens = loaded.state.tokens;
  context.earlier.assign(tokens.begin(), tokens.begin() + loaded.n_kv);
  context.prompt.assign(tokens.begin() + loaded.n_kv, tokens.end());
  if (!options.sampler.seed) context.generator = std::move(loaded.state.generator);  // --seed starts afresh
  return context;
}

// Resumes --session FILE when it exists and appends -p; else tokenizes -p alone (with BOS).
Result<RunContext> run_context(const RunOptions& options, const tokenizer::Tokenizer& tok,
                               const engine::SessionIdentity& identity, engine::Session& session) {
  const std::vector<int32_t> body = tok.encode(options.prompt, /*parse_special=*/true);
  const bool resuming = !options.session_path.empty() && std::filesystem::exists(options.session_path);
  if (!resuming && body.empty()) {
    return Error{options.session_path.empty() ? "-p: a prompt is needed"
                                              : "-p: a prompt is needed (" + options.session_path +
                                                    " does not exist yet: there is no saved run to continue)"};
  }
  RunContext context;
  if (resuming) {
    GUFO_ASSIGN_OR_RETURN(context, resumed_context(options, identity, session, !body.empty()));
  } else if (tok.vocab().add_bos) {
    context.prompt.push_back(tok.vocab().bos_id);
  }
  context.prompt.insert(context.prompt.end(), body.begin(), body.end());
  const int64_t total = static_cast<int64_t>(context.earlier.size() + context.prompt.size());
  if (total >= session.context_size()) {
    return Error{std::string(resuming ? "--session: the saved context and -p have " : "-p: the prompt has ") +
                 std::to_string(total) + " tokens, the context only " + std::to_string(session.context_size())};
  }
  return context;
}

// Saves the run to --session FILE: its context and generated tokens, the generator, its end.
Status save_run(const RunOptions& options, const RunContext& context, const engine::GenerateResult& result,
                const engine::SessionIdentity& identity, const engine::Session& session) {
  engine::SessionState state{
      .tokens = context.earlier, .generator = result.generator_state, .note = engine::stop_note(result.reason)};
  state.tokens.insert(state.tokens.end(), context.prompt.begin(), context.prompt.end());
  state.tokens.insert(state.tokens.end(), result.tokens.begin(), result.tokens.end());
  return engine::save_session(options.session_path, session, state, identity);
}

// After the text, as llama.cpp does: how fast the prompt was read and the answer written.
void print_timings(const engine::GenerateResult& result) {
  const engine::GenerateTimings& t = result.timings;
  const auto per_second = [](double n, double seconds) { return seconds > 0 ? n / seconds : 0.0; };
  const size_t generated = result.tokens.size();
  std::fprintf(stderr,
               "gufo run: prompt %lld tokens in %.1f ms (%.1f tokens/s); generated %zu tokens in %.1f ms "
               "(%.1f tokens/s); stop: %s\n",
               static_cast<long long>(t.prompt_tokens), t.prompt_seconds * 1e3,
               per_second(static_cast<double>(t.prompt_tokens), t.prompt_seconds), generated,
               t.generation_seconds * 1e3, per_second(static_cast<double>(generated), t.generation_seconds),
               std::string(engine::stop_reason_name(result.reason)).c_str());
  if (result.drafted > 0) {
    std::fprintf(stderr, "gufo run: speculative: %lld of %lld drafted tokens accepted (%.0f%%)\n",
                 static_cast<long long>(result.accepted), static_cast<long long>(result.drafted),
                 100.0 * static_cast<double>(result.accepted) / static_cast<double>(result.drafted));
  }
}

// Prints the per-position report to stderr and whether it is within the tolerances.
int report_prefill(const engine::PrefillReport& report) {
  std::fprintf(stderr, "validate-prefill: %zu positions (limits: max|dlogit| <= %.0e x max|logit|, KL <= %.0e)\n",
               report.positions.size(), engine::kValidateMaxAbsLogitRel, engine::kValidateMaxKl);
  for (size_t i = 0; i < report.positions.size(); ++i) {
    const engine::PrefillPosition& p = report.positions[i];
    std::fprintf(stderr, "  pos %4zu  max|dlogit| %.3e  KL %.3e\n", i, p.max_abs_diff, p.kl);
  }
  if (!report.ok) {
    return report_error(
        Error{"validate-prefill: batch prefill differs from token-by-token decoding beyond the limits"});
  }
  std::fprintf(stderr, "validate-prefill: ok\n");
  return 0;
}

// The grammar of --grammar (GBNF) or --json-schema (JSON Schema); errors name the file.
Result<grammar::Grammar> load_constraint(const RunOptions& options) {
  const bool gbnf = !options.grammar_path.empty();
  const std::string& path = gbnf ? options.grammar_path : options.json_schema_path;
  GUFO_ASSIGN_OR_RETURN(const std::string text, read_file(path));
  Result<grammar::Grammar> compiled = Error{""};
  if (gbnf) {
    compiled = grammar::parse_gbnf(text);
  } else {
    const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return Error{path + ": not valid JSON (--json-schema wants a JSON Schema)"};
    compiled = grammar::compile_json_schema(schema);
  }
  if (!compiled.ok()) return Error{path + ": " + compiled.error().message};
  return compiled;
}

int run_run(const RunOptions& options) {
  auto chosen = make_backend(options.backend, "run");
  if (!chosen.ok()) return report_error(chosen.error());
  auto loaded = load_generation_model(options.model_path, *chosen);
  backend::Backend& backend = *chosen->backend;  // after loading: auto may have fallen back
  const DType cache_type = chosen->cache_type;
  if (!loaded.ok()) return report_error(loaded.error());
  const engine::Model* model = loaded->model.get();
  const tokenizer::Tokenizer* tok = loaded->tokenizer.get();

  auto ctx = context_size(options.n_ctx, 4096, *model);
  if (!ctx.ok()) return report_error(ctx.error());
  auto session = engine::Session::create(*model, backend, *ctx, cache_type);
  if (!session.ok()) return report_error(session.error());
  // Hashed once a run: the model's identity reads its header and samples of every tensor.
  const engine::SessionIdentity identity =
      options.session_path.empty() ? engine::SessionIdentity{} : session_identity(*model, backend);
  auto context = run_context(options, *tok, identity, *session);
  if (!context.ok()) return report_error(context.error());
  if (options.validate_prefill) {
    std::vector<int32_t> all = context->earlier;
    all.insert(all.end(), context->prompt.begin(), context->prompt.end());
    auto report = engine::validate_prefill(*model, backend, all, cache_type);
    if (!report.ok()) return report_error(report.error());
    if (int code = report_prefill(*report); code != 0) return code;
  }
  auto draft = load_draft(options.spec, *chosen, *tok, *ctx);
  if (!draft.ok()) return report_error(draft.error());
  engine::GenerateOptions generate;
  generate.n_predict = options.n_predict;
  generate.stop = options.stop;
  generate.sampler = resolve_sampler(options.sampler, "gufo run");
  generate.spec = options.spec.spec;
  generate.earlier = context->earlier;
  generate.generator_state = context->generator;
  if (*draft) generate.spec.drafter = (*draft)->drafter.get();
  if (!options.grammar_path.empty() || !options.json_schema_path.empty()) {
    Result<grammar::Grammar> constraint = load_constraint(options);
    if (!constraint.ok()) return report_error(constraint.error());
    generate.grammar = std::make_shared<const grammar::Grammar>(std::move(constraint).value());
  }
  if (options.sampler.verbose) std::fprintf(stderr, "gufo run: on %s\n", backend.capabilities().device.c_str());
  auto result = engine::generate(*session, *tok, context->prompt, generate, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  if (!result.ok()) return report_error(result.error());
  std::fputc('\n', stdout);
  std::fflush(stdout);
  print_timings(*result);
  if (!options.session_path.empty()) {
    if (Status saved = save_run(options, *context, *result, identity, *session); !saved.ok()) {
      return report_error(saved.error());
    }
  }
  return 0;
}

}  // namespace

Command register_run(CLI::App& root) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* app = root.add_subcommand("run", "Generate text from a prompt, streaming to stdout");
  app->add_option("-m,--model", o->model_path,
                  "a GGUF model "
                  "(default: the shipped gufo-tiny; $GUFO_MODEL, $GUFO_MODELS_DIR)");
  app->add_option("-p,--prompt", o->prompt,
                  "the prompt (raw text; control tokens are parsed); with --session of a saved run, appended to its "
                  "context");
  app->add_option("-n,--n-predict", o->n_predict, "tokens to generate (-1: until the context is full)")
      ->check(CLI::Range(-1, 1 << 30));
  app->add_option("-c,--ctx", o->n_ctx, "context size in tokens, at most the model's (default: min(4096, the model's))")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  add_backend_flags(*app, o->backend);
  add_sampler_flags(*app, o->sampler);
  add_spec_flags(*app, o->spec);
  app->add_option("--stop", o->stop, "stop before this text (repeatable)");
  CLI::Option* grammar = app->add_option("--grammar", o->grammar_path,
                                         "a GBNF grammar file (llama.cpp's syntax): generate only what it allows");
  app->add_option("--json-schema", o->json_schema_path, "a JSON Schema file: generate only JSON that it accepts")
      ->excludes(grammar);
  app->add_flag("--validate-prefill", o->validate_prefill, "check batch prefill against token-by-token decoding first");
  app->add_option("--session", o->session_path,
                  "a session file: continue the run saved there (its keys and values reused; the sampler's generator "
                  "too unless --seed), then save this run to it (replaced only once the new file is complete)");
  return Command{app, [o] { return run_run(*o); }};
}

}  // namespace gufo::cli
