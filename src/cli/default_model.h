// The model a command uses when -m is absent (docs/architecture.md, "Command line": without -m,
// commands that need a model use the small model shipped in models/): gufo-tiny q8_0, found through
// $GUFO_MODEL, $GUFO_MODELS_DIR, <install prefix>/share/gufo/models, then the source tree's
// models/. Tested by tests/unit/cli/default_model_test.cpp and tests/models.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace gufo::cli {

inline constexpr const char* kDefaultModelFile = "gufo-tiny-q8_0.gguf";

// Where to look, in order; the environment variables as read (nullopt: unset).
struct ModelSearch {
  std::optional<std::string> gufo_model;       // $GUFO_MODEL: a file, used as it is
  std::optional<std::string> gufo_models_dir;  // $GUFO_MODELS_DIR: a folder holding kDefaultModelFile
  std::vector<std::string> dirs;               // then these folders, in order
};

// The search of this process: its environment, <exe>/../share/gufo/models, the source models/.
ModelSearch default_model_search();

// The path of the default model, or an error naming every place it looked. A $GUFO_MODEL that
// names a missing file is an error by itself (the user asked for that file).
Result<std::string> find_default_model(const ModelSearch& search);

// `path` itself when not empty, else the default model (an error says where it looked).
Result<std::string> model_or_default(const std::string& path);

}  // namespace gufo::cli
