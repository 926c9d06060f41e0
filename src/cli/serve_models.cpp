// Model sources and the loader of `gufo serve` (see serve_models.h).
#include "cli/serve_models.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <system_error>

#include "cli/generation_flags.h"
#include "engine/chat_prompt.h"
#include "gguf/file.h"

namespace gufo::cli {

namespace {

namespace fs = std::filesystem;

// Everything one served model owns. Members are destroyed in reverse order: the scheduler
// (and its thread) first, then the chat template, tokenizer, weights and backend.
class ServeModel final : public server::LoadedModel {
 public:
  const server::ServedModel& served() const override { return served_; }

  ChosenBackend chosen;
  GenerationModel loaded;
  std::optional<engine::ChatPrompt> chat_prompt;
  std::unique_ptr<engine::Scheduler> scheduler;
  server::ServedModel served_;
};

Result<std::unique_ptr<server::LoadedModel>> load_served_model(const ServeModelOptions& options,
                                                               const server::ModelSource& source,
                                                               const server::LoadRoom& room) {
  auto model = std::make_unique<ServeModel>();
  GUFO_ASSIGN_OR_RETURN(model->chosen, make_backend(options.backend, "serve"));
  GUFO_ASSIGN_OR_RETURN(model->loaded, load_generation_model(source.path, model->chosen));
  const engine::Model& weights = *model->loaded.model;
  auto chat_prompt = engine::ChatPrompt::load(weights, *model->loaded.tokenizer);
  if (chat_prompt.ok()) {
    model->chat_prompt.emplace(std::move(chat_prompt).value());
  } else {
    std::fprintf(stderr, "gufo serve: %s: no chat template (%s); /v1/completions only\n", source.name.c_str(),
                 chat_prompt.error().message.c_str());
  }
  GUFO_ASSIGN_OR_RETURN(const int64_t n_ctx, context_size(options.n_ctx, 4096, weights));
  engine::SchedulerOptions engine = options.engine;
  engine.n_ctx = n_ctx;
  engine.cache_type = model->chosen.cache_type;
  engine.kv_memory_share = 1.0 / static_cast<double>(std::max<size_t>(1, room.sharing));
  engine.kv_memory_kept = room.others_bytes;
  GUFO_ASSIGN_OR_RETURN(model->scheduler,
                        engine::Scheduler::create(weights, *model->chosen.backend, *model->loaded.tokenizer, engine));
  model->served_ = server::ServedModel{
      .name = source.name,
      .scheduler = model->scheduler.get(),
      .tokenizer = model->loaded.tokenizer.get(),
      .chat_prompt = model->chat_prompt ? &*model->chat_prompt : nullptr,
      .n_ctx = n_ctx,
      .n_vocab = static_cast<int32_t>(weights.hparams().n_vocab),
      .n_embd = weights.hparams().n_embd,
      .pooling = options.pooling.value_or(weights.hparams().pooling),
      .tool_syntax = model->chat_prompt ? server::tool_syntax_of(model->chat_prompt->template_source())
                                        : server::ToolSyntax::Hermes,
      .spec = options.spec,
      .session = session_identity(weights, *model->chosen.backend)};
  const bool shared =
      room.sharing > 1 && options.engine.kv_tokens == 0 && model->chosen.backend->capabilities().device_memory;
  std::fprintf(stderr, "gufo serve: loaded %s: %d parallel, context %lld, KV pool %lld tokens%s, on %s\n",
               source.name.c_str(), engine.n_parallel, static_cast<long long>(n_ctx),
               static_cast<long long>(model->scheduler->options().kv_tokens),
               shared ? (" (a 1/" + std::to_string(room.sharing) + " share of the device memory for KV)").c_str() : "",
               model->chosen.backend->capabilities().device.c_str());
  return std::unique_ptr<server::LoadedModel>(std::move(model));
}

}  // namespace

Result<std::vector<server::ModelSource>> serve_model_sources(const std::vector<std::string>& paths,
                                                             const std::string& models_dir, const std::string& alias) {
  std::vector<server::ModelSource> sources;
  for (const std::string& path : paths) {
    // A missing or malformed file fails before the port is taken; loading checks the rest.
    if (auto header = gguf::File::open(path); !header.ok()) return header.error();
    sources.push_back({.name = fs::path(path).stem().string(), .path = path});
  }
  if (!models_dir.empty()) {
    std::error_code ec;
    fs::directory_iterator it(models_dir, ec);
    if (ec) return Error{"--models-dir " + models_dir + ": " + ec.message()};
    std::vector<fs::path> found;
    for (const fs::directory_entry& entry : it) {
      if (entry.path().extension() == ".gguf" && entry.is_regular_file(ec)) found.push_back(entry.path());
    }
    std::sort(found.begin(), found.end());
    for (const fs::path& path : found) sources.push_back({.name = path.stem().string(), .path = path.string()});
    if (found.empty()) return Error{"--models-dir " + models_dir + ": no .gguf files"};
  }
  if (sources.empty()) return Error{"no model to serve"};
  if (!alias.empty()) {
    if (sources.size() != 1) return Error{"--alias names one model, but there are " + std::to_string(sources.size())};
    sources.front().name = alias;
  }
  std::set<std::string> names;
  for (const server::ModelSource& source : sources) {
    if (!names.insert(source.name).second) {
      return Error{"two models are named '" + source.name + "' (" + source.path + "): rename one file"};
    }
  }
  return sources;
}

server::ModelRegistry::Loader serve_model_loader(ServeModelOptions options) {
  return [options = std::move(options)](const server::ModelSource& source, const server::LoadRoom& room) {
    return load_served_model(options, source, room);
  };
}

uint64_t available_host_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace gufo::cli
