// What `gufo run`, `gufo chat` and `gufo serve` share: the sampling flags and loading a model
// with its tokenizer (checked to fit the model) for generation.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

#include "backend/backend.h"
#include "cli/backend_flags.h"
#include "core/dtype.h"
#include "core/result.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_draft.h"
#include "engine/sampler.h"
#include "engine/session_file.h"
#include "tokenizer/tokenizer.h"

namespace gufo::cli {

// The sampling flags as given. Without --seed every run draws a new seed (as llama.cpp
// does); --verbose prints it, so that --seed can repeat the run.
struct SamplerFlags {
  engine::SamplerParams params;
  std::optional<uint64_t> seed;
  bool verbose = false;
};

// --temp, --top-k, --top-p, --min-p, the penalties, --repeat-last-n, --seed and -v/--verbose,
// each range-checked (an error names the flag).
void add_sampler_flags(CLI::App& app, SamplerFlags& flags);

// The parameters with the seed settled: --seed, or a fresh random one (printed on stderr
// as "<command>: seed N" with --verbose).
engine::SamplerParams resolve_sampler(const SamplerFlags& flags, const char* command);

// Speculative decoding as given: SpecOptions, and the draft model's file for --spec draft.
struct SpecFlags {
  engine::SpecOptions spec;
  std::string draft_model;
};

// --spec none|ngram|draft, --draft-model FILE, --draft-max N and --draft-min N (engine/
// generate.h, SpecOptions). --draft-model alone means --spec draft; --spec draft without it,
// --draft-model beside --spec none or ngram, and a --draft-min above --draft-max are refused
// when the command line is parsed.
void add_spec_flags(CLI::App& app, SpecFlags& flags);

// -c/--ctx checked against the model: beyond its training context is an error naming the
// flag; unset: min(fallback, training context).
Result<int64_t> context_size(std::optional<int64_t> flag, int64_t fallback, const engine::Model& model);

struct GenerationModel {
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

// Loads `path` (the default model when empty) for the chosen backend (load_model: with
// --device auto it may become the CPU) and its tokenizer; fails if the tokenizer has more
// tokens than the model has embedding rows. may_fall_back: as load_model's.
Result<GenerationModel> load_generation_model(const std::string& path, ChosenBackend& chosen,
                                              bool may_fall_back = true);

// The draft model of --spec draft, loaded on the chosen backend beside the model, with a
// session of n_ctx positions (at most its own training context) and the drafter that keeps it.
struct LoadedDraft {
  GenerationModel loaded;
  std::unique_ptr<engine::Session> session;
  std::unique_ptr<engine::ModelDrafter> drafter;
};

// Loads flags.draft_model when flags say --spec draft (null otherwise); refuses a draft whose
// vocabulary differs from `target`'s. The caller hands its drafter to SpecOptions::drafter.
Result<std::unique_ptr<LoadedDraft>> load_draft(const SpecFlags& flags, ChosenBackend& chosen,
                                                const tokenizer::Tokenizer& target, int64_t n_ctx);

// What --session files are checked against: the model's identity, and this gufo build on
// this backend's kernels ("gufo 0.1.0 (abc123) CPU avx512vnni").
engine::SessionIdentity session_identity(const engine::Model& model, const backend::Backend& backend);

}  // namespace gufo::cli
