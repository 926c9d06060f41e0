// `gufo serve [-m M.gguf] [--host H] [--port P] [--parallel N] ...`: the OpenAI-compatible
// server. The model file is checked, then the port is bound (exclusively) so that /health
// answers and /ready says "loading" while the model loads and the engine starts.
// SIGTERM or SIGINT: while loading, the process ends at once (nothing is being answered);
// once serving, new requests get 503, running ones have --grace seconds to finish (a second
// signal cuts that short), the rest are cancelled, and the process exits 0; a third signal
// ends it at once (exit 1).
// A model that cannot be loaded ends the process with one line and exit 1.
// Tested by tests/functional (the OpenAI client against a real server; lifecycle.test.mjs).
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/backend_flags.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/generation_flags.h"
#include "cli/serve_models.h"
#include "cli/stop_signals.h"
#include "core/faults.h"
#include "engine/scheduler.h"
#include "model/hparams.h"
#include "server/http_server.h"
#include "server/reasoning.h"

namespace gufo::cli {

namespace {

struct ServeOptions {
  std::vector<std::string> model_paths;
  std::string models_dir;
  std::string alias;
  size_t max_loaded = 3;
  server::ServerOptions http;
  engine::SchedulerOptions engine;
  std::optional<int64_t> n_ctx;  // unset: min(model's, 4096)
  BackendFlags backend;
  bool no_prefix_cache = false;
  bool log_disable = false;
  double grace_seconds = 5.0;
  std::string reasoning_format = "deepseek";  // server/reasoning.h
  std::string pooling;                        // "": each model's {arch}.pooling_type
  engine::SpecChoice spec;                    // --spec none or ngram
};

std::optional<model::Pooling> pooling_of(const std::string& name) {
  for (const model::Pooling p :
       {model::Pooling::None, model::Pooling::Mean, model::Pooling::Cls, model::Pooling::Last}) {
    if (name == model::pooling_name(p)) return p;
  }
  return std::nullopt;
}

// The stop signals as the serving thread sees them (StopSignals' handler fills it).
class StopRequest {
 public:
  // Called on the signal thread. Before serving, there is nothing to finish: exit now.
  void on_signal(int signal_number, int count) {
    std::lock_guard lock(mutex_);
    if (!serving_) {
      std::fprintf(stderr, "gufo serve: %s while starting: exiting\n", name(signal_number));
      std::_Exit(0);  // the loading thread cannot be interrupted, and nothing needs saving
    }
    if (count > 2) {  // the drain and the cancel have had their chance
      std::fprintf(stderr, "gufo serve: %s again: exiting now\n", name(signal_number));
      std::_Exit(1);
    }
    if (count == 1) signal_ = signal_number;
    count_ = count;
    changed_.notify_all();
  }

  void start_serving() {
    std::lock_guard lock(mutex_);
    serving_ = true;
  }

  // Blocks until the first signal; returns its name.
  const char* wait_first() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return count_ > 0; });
    return name(signal_);
  }

  // Waits up to `period` for a second signal; true when it came.
  bool wait_second(std::chrono::milliseconds period) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, period, [&] { return count_ > 1; });
  }

 private:
  static const char* name(int signal_number) { return signal_number == SIGTERM ? "SIGTERM" : "SIGINT"; }

  std::mutex mutex_;
  std::condition_variable changed_;
  bool serving_ = false;
  int signal_ = 0;
  int count_ = 0;
};

int run_serve(ServeOptions options) {
  StopRequest stop;
  const StopSignals signals([&stop](int signal_number, int count) { stop.on_signal(signal_number, count); });
  signal(SIGPIPE, SIG_IGN);  // a vanished client is a failed write, not a dead server
  if (options.http.api_key.empty()) {
    if (const char* key = std::getenv("GUFO_API_KEY"); key != nullptr) options.http.api_key = key;
  }
  if (auto cache_type = parse_cache_type(options.backend.cache_type); !cache_type.ok()) {
    return report_error(cache_type.error());
  }
  // GUFO_FAULTS (core/faults.h): the request delay is the server's; make_backend reads the
  // forward faults and says what is injected.
  auto faults = faults_from_environment();
  if (!faults.ok()) return report_error(faults.error());
  options.http.injected_delay = faults->request_delay;
  // A leftover test variable must not slow a server unnoticed.
  if (faults->request_delay.count() > 0) {
    std::fprintf(stderr, "gufo serve: GUFO_FAULTS: every request waits %lld ms first (a test fault)\n",
                 static_cast<long long>(faults->request_delay.count()));
  }
  if (options.model_paths.empty() && options.models_dir.empty()) {
    auto model_path = model_or_default("");
    if (!model_path.ok()) return report_error(model_path.error());
    options.model_paths.push_back(*model_path);
  }
  auto sources = serve_model_sources(options.model_paths, options.models_dir, options.alias);
  if (!sources.ok()) return report_error(sources.error());
  const std::optional<bool> separate_reasoning = server::parse_reasoning_format(options.reasoning_format);
  if (!separate_reasoning) {
    return report_error(Error{"--reasoning-format must be " + std::string(server::kReasoningFormatNames) + ", not '" +
                              options.reasoning_format + "'"});
  }
  options.http.separate_reasoning = *separate_reasoning;
  if (options.spec.draft_min > options.spec.draft_max) {
    return report_error(Error{"--draft-min " + std::to_string(options.spec.draft_min) + " is more than --draft-max " +
                              std::to_string(options.spec.draft_max)});
  }
  if (!options.http.slot_save_path.empty()) {
    std::error_code made;
    std::filesystem::create_directories(options.http.slot_save_path, made);
    if (made || !std::filesystem::is_directory(options.http.slot_save_path)) {
      return report_error(Error{"--slot-save-path " + options.http.slot_save_path + ": not a directory" +
                                (made ? " (" + made.message() + ")" : "")});
    }
  }
  options.http.access_log = !options.log_disable;
  options.http.http_threads =
      std::max(options.http.http_threads, options.engine.n_parallel + options.engine.max_queue + 16);

  server::HttpServer http(options.http);
  auto port = http.bind();
  if (!port.ok()) return report_error(port.error());
  std::thread listener([&http] { http.serve(); });
  const server::ModelSource first = sources->front();
  std::fprintf(stderr, "gufo serve: listening on http://%s:%d (loading %s)\n", options.http.host.c_str(), *port,
               first.path.c_str());

  options.engine.prefix_cache = !options.no_prefix_cache;
  const bool on_cpu = options.backend.device == "cpu";
  server::ModelRegistry models(
      std::move(sources).value(),
      serve_model_loader({.backend = options.backend,
                          .n_ctx = options.n_ctx,
                          .engine = options.engine,
                          .pooling = pooling_of(options.pooling),
                          .spec = options.spec}),
      // NOTE(models): only host memory is known before a load; on a GPU the load itself fails
      // when the device is full, and that request gets the error.
      {.max_loaded = options.max_loaded, .free_memory = on_cpu ? available_host_memory : std::function<uint64_t()>()});
  // The default model loads now, so /ready means it answers; the others on first use.
  if (auto loaded = models.acquire(""); !loaded.ok()) {
    http.stop();
    listener.join();
    return report_error(loaded.error());
  }
  stop.start_serving();  // before the first request can be answered: from now on a signal drains
  http.set_models(models);
  std::fprintf(stderr, "gufo serve: ready: %zu model(s), default %s\n", models.list().size(), first.name.c_str());

  const char* signal_name = stop.wait_first();
  // Refusing first: a client that reads the line below and sends a request gets the 503.
  http.stop_accepting();
  std::fprintf(stderr, "gufo serve: %s: finishing running requests (up to %.0f s; a second signal cancels them)\n",
               signal_name, options.grace_seconds);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(options.grace_seconds);
  const auto busy = [&models] {
    for (const auto& model : models.loaded_models()) {
      const engine::EngineStats stats = model->served().scheduler->stats();
      if (stats.running > 0 || stats.waiting > 0) return true;
    }
    return false;
  };
  while (std::chrono::steady_clock::now() < deadline) {
    if (!busy()) break;
    if (stop.wait_second(std::chrono::milliseconds(20))) {
      std::fprintf(stderr, "gufo serve: second signal: cancelling running requests\n");
      break;
    }
  }
  for (const auto& model : models.loaded_models()) model->served().scheduler->shutdown();  // each stream gets its end
  http.stop();
  listener.join();
  std::fprintf(stderr, "gufo serve: stopped\n");
  return 0;
}

}  // namespace

Command register_serve(CLI::App& root) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* app = root.add_subcommand(
      "serve", "Serve a model over the OpenAI API (chat, completions, responses) and Anthropic's Messages API");
  app->add_option("-m,--model", o->model_paths,
                  "a GGUF model; again for more, the first is the default (default: the shipped gufo-tiny; "
                  "$GUFO_MODEL, $GUFO_MODELS_DIR)")
      ->allow_extra_args(false);
  app->add_option("--models-dir", o->models_dir, "serve every *.gguf in this folder too (ids: the file names)");
  app->add_option("--max-loaded", o->max_loaded, "models kept loaded at once (the least recently used goes first)")
      ->check(CLI::Range(size_t{1}, size_t{1024}));
  app->add_option("--alias", o->alias,
                  "the model id clients see, with one model (default: the file name without .gguf)");
  app->add_option("--host", o->http.host, "address to listen on (default 127.0.0.1: this machine only)");
  app->add_option("--port", o->http.port, "TCP port (0: any free one, printed on stderr)")->check(CLI::Range(0, 65535));
  app->add_option("--api-key", o->http.api_key,
                  "require 'Authorization: Bearer KEY' on /v1 routes (default: $GUFO_API_KEY, else none)");
  app->add_option("-P,--parallel", o->engine.n_parallel, "sequences decoded at once")->check(CLI::Range(1, 1024));
  app->add_option("--queue", o->engine.max_queue, "requests that may wait beyond --parallel before 429s")
      ->check(CLI::Range(0, 1 << 20));
  app->add_option("-c,--ctx", o->n_ctx, "context per sequence in tokens (default: the model's, at most 4096)")
      ->check(CLI::Range(2, 1 << 24));
  app->add_option("--kv-tokens", o->engine.kv_tokens, "KV-cache pool size in tokens (default: ctx x parallel)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 32));
  app->add_option("-b,--batch", o->engine.step_tokens, "tokens per engine step (decodes plus prompt chunks)")
      ->check(CLI::Range(1, 1 << 16));
  app->add_option("--block-size", o->engine.block_size, "positions per KV block (a power of two)")
      ->check(CLI::IsMember({1, 2, 4, 8, 16, 32, 64, 128, 256}));
  app->add_flag("--no-prefix-cache", o->no_prefix_cache, "do not reuse KV blocks across requests");
  add_backend_flags(*app, o->backend);
  app->add_option("--max-body", o->http.max_body_bytes, "largest request body in bytes")
      ->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  app->add_option("--reasoning-format", o->reasoning_format,
                  "chat answers' <think> blocks: deepseek/auto (as message.reasoning_content, the default) or none "
                  "(left in the content)")
      ->check(
          [](const std::string& name) {
            return server::parse_reasoning_format(name) ? std::string()
                                                        : "must be " + std::string(server::kReasoningFormatNames);
          },
          "FORMAT");
  app->add_option("--grace", o->grace_seconds, "seconds running requests get to finish on SIGTERM")
      ->check(CLI::Range(0.0, 3600.0));
  app->add_flag("--log-disable", o->log_disable, "no access log (a line per request on stderr)");
  app->add_option("--pooling", o->pooling,
                  "how /v1/embeddings pools the final hidden states: none, mean, cls or last (default: what each "
                  "GGUF declares in {arch}.pooling_type, else mean)")
      ->check(CLI::IsMember({"none", "mean", "cls", "last"}));
  app->add_option_function<std::string>(
         "--spec", [o](const std::string& name) { o->spec.mode = *engine::spec_mode_named(name); },
         "speculative decoding for requests that do not set \"spec\": ngram (what followed the context's last "
         "tokens where they came before, verified in the batch) or none (default); the output is the same either "
         "way")
      ->check(CLI::IsMember({"none", "ngram"}));
  app->add_option("--draft-max", o->spec.draft_max, "draft tokens a step at most (a request's \"draft_max\" overrides)")
      ->check(CLI::Range(1, static_cast<int>(engine::kMaxDraftTokens)));
  app->add_option("--draft-min", o->spec.draft_min,
                  "draft tokens a step at least where the lookup finds them (default 0: drafts only where they pay; a "
                  "request's \"draft_min\" overrides)")
      ->check(CLI::Range(0, static_cast<int>(engine::kMaxDraftTokens)));
  app->add_option("--slot-save-path", o->http.slot_save_path,
                  "directory (created if missing) where POST /slots/{id}?action=save and restore keep slot files "
                  "(llama.cpp's slot API; without it those actions are 501s)");
  return Command{app, [o] { return run_serve(*o); }};
}

}  // namespace gufo::cli
