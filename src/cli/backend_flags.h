// The flags every command that runs a model takes, declared once: --device cpu|cuda|cuda:N|auto
// (default auto), -t/--threads and --cache-type f16|f32; and the backend they make (through
// backend/registry.h, the one place that names concrete backends). When auto falls back to
// the CPU (no GPU, or a model the GPU cannot run), one line on stderr says why.
// Tested by tests/unit/engine/cli_test.cpp and tests/unit/backend/registry_test.cpp.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "backend/backend.h"
#include "core/dtype.h"
#include "core/faults.h"
#include "core/result.h"
#include "engine/model.h"

namespace gufo::cli {

struct BackendFlags {
  std::string device = "auto";
  int threads = 0;
  std::string cache_type = "f16";
};

void add_backend_flags(CLI::App& app, BackendFlags& flags);

// "f16" or "f32" (--cache-type).
Result<DType> parse_cache_type(const std::string& name);

struct ChosenBackend {
  std::unique_ptr<backend::Backend> backend;
  DType cache_type = DType::F16;
  bool automatic = false;  // --device auto: load_model may still fall back to the CPU
  int threads = 0;
  std::string command;  // prefixes the notices
  Faults faults;        // GUFO_FAULTS (core/faults.h), kept for a fallback backend
};

// Parses the flags and creates the backend; `command` prefixes the fallback notice.
Result<ChosenBackend> make_backend(const BackendFlags& flags, const char* command);

// Loads `path` (the default model when empty) for the chosen backend. With --device auto, a
// model the GPU cannot run or hold (ErrorKind Unsupported or OutOfMemory) is loaded on the CPU
// instead, and stderr says why: `chosen.backend` is then the CPU backend. may_fall_back false:
// never (a second model, a draft, beside one already loaded on that backend).
Result<std::unique_ptr<engine::Model>> load_model(ChosenBackend& chosen, const std::string& path,
                                                  bool may_fall_back = true);

}  // namespace gufo::cli
