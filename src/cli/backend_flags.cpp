// Backend flags (see backend_flags.h).
#include "cli/backend_flags.h"

#include <cstdio>

#include "backend/registry.h"
#include "cli/default_model.h"

namespace gufo::cli {

void add_backend_flags(CLI::App& app, BackendFlags& flags) {
  app.add_option("--device", flags.device,
                 "where the model runs: cpu, cuda, cuda:N or auto (CUDA when built with it and a GPU is present)");
  app.add_option("-t,--threads", flags.threads, "CPU threads (0: all)")->check(CLI::Range(0, 1024));
  app.add_option("--cache-type", flags.cache_type, "KV cache type: f16 or f32");
}

Result<DType> parse_cache_type(const std::string& name) {
  if (name == "f16") return DType::F16;
  if (name == "f32") return DType::F32;
  return Error{"--cache-type " + name + ": expected f16 or f32"};
}

Result<ChosenBackend> make_backend(const BackendFlags& flags, const char* command) {
  ChosenBackend chosen;
  GUFO_ASSIGN_OR_RETURN(chosen.cache_type, parse_cache_type(flags.cache_type));
  GUFO_ASSIGN_OR_RETURN(const backend::DeviceChoice device, backend::parse_device(flags.device));
  GUFO_ASSIGN_OR_RETURN(chosen.faults, faults_from_environment());
  GUFO_ASSIGN_OR_RETURN(backend::CreatedBackend created,
                        backend::create_backend({.device = device, .threads = flags.threads, .faults = chosen.faults}));
  // A leftover test variable must not break a run unnoticed (serve says its request delay).
  Faults forward_faults = chosen.faults;
  forward_faults.request_delay = {};
  if (const std::string injected = forward_faults.describe(); !injected.empty()) {
    std::fprintf(stderr, "gufo %s: GUFO_FAULTS: %s (a test fault)\n", command, injected.c_str());
  }
  if (!created.notice.empty()) std::fprintf(stderr, "gufo %s: %s\n", command, created.notice.c_str());
  chosen.backend = std::move(created.backend);
  chosen.automatic = device.kind == backend::DeviceChoice::Kind::Auto;
  chosen.threads = flags.threads;
  chosen.command = command;
  return chosen;
}

Result<std::unique_ptr<engine::Model>> load_model(ChosenBackend& chosen, const std::string& model_path,
                                                  bool may_fall_back) {
  GUFO_ASSIGN_OR_RETURN(const std::string path, model_or_default(model_path));
  auto loaded = engine::Model::load(path, *chosen.backend);
  const bool fall_back =
      !loaded.ok() && may_fall_back && chosen.automatic && chosen.backend->name() != "cpu" &&
      (loaded.error().kind == ErrorKind::Unsupported || loaded.error().kind == ErrorKind::OutOfMemory);
  if (!fall_back) return loaded;
  std::fprintf(stderr, "gufo %s: using the CPU: %s\n", chosen.command.c_str(), loaded.error().message.c_str());
  const backend::BackendOptions cpu{.device = {.kind = backend::DeviceChoice::Kind::Cpu, .index = 0},
                                    .threads = chosen.threads,
                                    .faults = chosen.faults};
  GUFO_ASSIGN_OR_RETURN(backend::CreatedBackend created, backend::create_backend(cpu));
  chosen.backend = std::move(created.backend);  // the GPU's memory goes with the old backend
  return engine::Model::load(path, *chosen.backend);
}

}  // namespace gufo::cli
