// Backend flags (see backend_flags.h).
#include "cli/backend_flags.h"

#include <cstdio>

#include "backend/registry.h"
#include "cli/generation_flags.h"

namespace gufo::cli {

void add_backend_flags(CLI::App& app, BackendFlags& flags) {
  app.add_option("--device", flags.device,
                 "where the model runs: cpu, cuda, cuda:N or auto (CUDA when built with it and a GPU is present)");
  app.add_option("-t,--threads", flags.threads, "CPU threads (0: all)")->check(CLI::Range(0, 1024));
  app.add_option("--cache-type", flags.cache_type, "KV cache type: f16 or f32");
}

Result<ChosenBackend> make_backend(const BackendFlags& flags, const char* command) {
  ChosenBackend chosen;
  GUFO_ASSIGN_OR_RETURN(chosen.cache_type, parse_cache_type(flags.cache_type));
  GUFO_ASSIGN_OR_RETURN(const backend::DeviceChoice device, backend::parse_device(flags.device));
  GUFO_ASSIGN_OR_RETURN(backend::CreatedBackend created,
                        backend::create_backend({.device = device, .threads = flags.threads}));
  if (!created.notice.empty()) std::fprintf(stderr, "gufo %s: %s\n", command, created.notice.c_str());
  chosen.backend = std::move(created.backend);
  return chosen;
}

}  // namespace gufo::cli
