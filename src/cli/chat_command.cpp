// `gufo chat -m M.gguf [--system S] [--no-thinking] [-n N] [-c CTX] [sampling flags]`: an
// interactive conversation using the model's chat template (engine/chat.h). On a terminal,
// lines are edited readline-style with history (line_reader.h). Ctrl-C stops the current
// answer and the chat goes on; at the prompt, Ctrl-C, Ctrl-D or /exit leave. /reset starts
// over (keeping --system). Piped stdin works too: one message per line. --session FILE resumes
// the conversation saved there, if any, and saves it after every answer.
// Tested by tests/unit/engine/cli_test.cpp (and chat_test.cpp for the conversation logic).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/backend_flags.h"
#include "cli/command.h"
#include "cli/generation_flags.h"
#include "cli/interrupt.h"
#include "cli/line_reader.h"
#include "engine/chat.h"

namespace gufo::cli {

namespace {

struct ChatCommandOptions {
  std::string model_path;
  std::string system_prompt;
  bool no_thinking = false;
  int32_t n_predict = -1;
  std::optional<int64_t> n_ctx;  // unset: min(4096, the model's)
  BackendFlags backend;
  std::vector<std::string> stop;
  SamplerFlags sampler;
  SpecFlags spec;
  std::string session_path;  // --session: resumed when it exists, saved after every answer
};

constexpr const char* kHelp =
    "/reset starts over, /exit leaves (so do Ctrl-D and Ctrl-C at the prompt); Ctrl-C stops an answer; "
    "end a line with \\ to continue it";

void write_out(std::string_view text) {
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
}

int run_chat(const ChatCommandOptions& options) {
  auto chosen = make_backend(options.backend, "chat");
  if (!chosen.ok()) return report_error(chosen.error());
  auto loaded = load_generation_model(options.model_path, *chosen);
  backend::Backend& backend = *chosen->backend;  // after loading: auto may have fallen back
  if (!loaded.ok()) return report_error(loaded.error());
  auto n_ctx = context_size(options.n_ctx, 4096, *loaded->model);
  if (!n_ctx.ok()) return report_error(n_ctx.error());
  auto session = engine::Session::create(*loaded->model, backend, *n_ctx, chosen->cache_type);
  if (!session.ok()) return report_error(session.error());
  auto draft = load_draft(options.spec, *chosen, *loaded->tokenizer, *n_ctx);
  if (!draft.ok()) return report_error(draft.error());
  engine::ChatOptions chat_options;
  chat_options.system_prompt = options.system_prompt;
  if (options.no_thinking) chat_options.enable_thinking = false;
  chat_options.generate.n_predict = options.n_predict;
  chat_options.generate.stop = options.stop;
  chat_options.generate.sampler = resolve_sampler(options.sampler, "gufo chat");
  chat_options.generate.spec = options.spec.spec;
  if (*draft) chat_options.generate.spec.drafter = (*draft)->drafter.get();
  auto chat = engine::Chat::create(*loaded->model, std::move(session).value(), *loaded->tokenizer, chat_options);
  if (!chat.ok()) return report_error(chat.error());
  const engine::SessionIdentity identity = session_identity(*loaded->model, backend);
  if (!options.session_path.empty() && std::filesystem::exists(options.session_path)) {
    if (Status resumed = chat->resume(options.session_path, identity); !resumed.ok()) {
      return report_error(resumed.error());
    }
    std::fprintf(stderr, "gufo chat: resumed %zu messages from %s\n", chat->messages().size(),
                 options.session_path.c_str());
  }

  InterruptScope interrupts;
  LineReader reader;
  if (reader.interactive()) std::fprintf(stderr, "gufo chat: %s\n", kHelp);
  for (;;) {
    InterruptScope::flag() = false;
    std::optional<std::string> line = reader.read(reader.interactive() ? "> " : "");
    if (!line) break;
    if (*line == "/exit" || *line == "/quit") break;
    if (*line == "/reset") {
      chat->reset();
      continue;
    }
    if (*line == "/help") {
      std::fprintf(stderr, "%s\n", kHelp);
      continue;
    }
    if (line->empty()) continue;
    auto turn = chat->reply(*line, write_out, &InterruptScope::flag());
    if (!turn.ok()) {
      // One bad turn (say, a full context) does not end the conversation on a terminal.
      if (!reader.interactive()) return report_error(turn.error());
      std::fprintf(stderr, "gufo: error: %s\n", turn.error().message.c_str());
      continue;
    }
    write_out("\n");
    if (!options.session_path.empty()) {
      if (Status saved = chat->save(options.session_path, identity); !saved.ok()) {
        if (!reader.interactive()) return report_error(saved.error());
        std::fprintf(stderr, "gufo: error: %s\n", saved.error().message.c_str());
      }
    }
    if (turn->result.reason == engine::StopReason::Cancelled) std::fprintf(stderr, "[answer stopped]\n");
    if (turn->result.reason == engine::StopReason::ContextFull) {
      std::fprintf(stderr, "[the context is full: /reset to start over]\n");
    }
  }
  if (reader.interactive()) write_out("\n");
  return 0;
}

}  // namespace

Command register_chat(CLI::App& root) {
  auto o = std::make_shared<ChatCommandOptions>();
  CLI::App* app = root.add_subcommand("chat", "Chat with a model interactively, using its chat template");
  app->add_option("-m,--model", o->model_path,
                  "a GGUF model with tokenizer.chat_template "
                  "(default: the shipped gufo-tiny; $GUFO_MODEL, $GUFO_MODELS_DIR)");
  app->add_option("--system", o->system_prompt, "a system prompt");
  app->add_flag("--no-thinking", o->no_thinking, "enable_thinking=false for templates that have it (Qwen3)");
  app->add_option("-n,--n-predict", o->n_predict, "at most this many tokens per answer (-1: no limit)")
      ->check(CLI::Range(-1, 1 << 30));
  app->add_option("-c,--ctx", o->n_ctx, "context size in tokens, at most the model's (default: min(4096, the model's))")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  add_backend_flags(*app, o->backend);
  app->add_option("--stop", o->stop, "end an answer before this text (repeatable)");
  add_sampler_flags(*app, o->sampler);
  add_spec_flags(*app, o->spec);
  app->add_option("--session", o->session_path,
                  "a session file: resume the conversation saved there (its keys and values reused), and save it "
                  "after every answer (replaced only once the new file is complete)");
  return Command{app, [o] { return run_chat(*o); }};
}

}  // namespace gufo::cli
