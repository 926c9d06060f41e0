// The models `gufo serve` offers: where they come from (`-m`, given once or more, and every
// *.gguf of `--models-dir`), and how one is loaded for serving (its own backend, weights,
// tokenizer, chat template and scheduler: server::ModelRegistry calls the loader on first
// use). Tested by tests/functional/models.test.mjs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/backend_flags.h"
#include "core/result.h"
#include "engine/scheduler.h"
#include "server/model_registry.h"

namespace gufo::cli {

// `paths` in order, then the *.gguf files of `models_dir` sorted by name; ids are the file
// names without .gguf (`alias` renames the only one). Fails on duplicate ids, an empty
// list, or a -m file that is not a GGUF (checked now, before the port is taken).
Result<std::vector<server::ModelSource>> serve_model_sources(const std::vector<std::string>& paths,
                                                             const std::string& models_dir, const std::string& alias);

struct ServeModelOptions {
  BackendFlags backend;
  std::optional<int64_t> n_ctx;  // unset: min(model's, 4096)
  engine::SchedulerOptions engine;
  std::optional<model::Pooling> pooling;  // --pooling: overrides every model's {arch}.pooling_type
  engine::SpecChoice spec;                // --spec, --draft-max, --draft-min: what requests that do not say get
};

server::ModelRegistry::Loader serve_model_loader(ServeModelOptions options);

// Bytes the kernel says are available for a new allocation (MemAvailable), 0 if unknown.
uint64_t available_host_memory();

}  // namespace gufo::cli
