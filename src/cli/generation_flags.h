// What `gufo run`, `gufo chat` and `gufo serve` share: the sampling flags and loading a model
// with its tokenizer (checked to fit the model) for generation.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "backend/backend.h"
#include "cli/backend_flags.h"
#include "core/dtype.h"
#include "core/result.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "tokenizer/tokenizer.h"

namespace gufo::cli {

// --temp, --top-k, --top-p, --min-p, the penalties, --repeat-last-n and --seed.
void add_sampler_flags(CLI::App& app, engine::SamplerParams& params);

struct GenerationModel {
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Loads `path` (the default model when empty) for the chosen backend (load_model: with
// --device auto it may become the CPU) and its tokenizer; fails if the tokenizer has more
// tokens than the model has embedding rows.
Result<GenerationModel> load_generation_model(const std::string& path, ChosenBackend& chosen);

}  // namespace gufo::cli
