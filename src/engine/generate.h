// Generation loop: prompt in, text streamed out through a callback, until n_predict tokens,
// an end-of-generation token, a stop string, a full context or a cancel request. Text that
// could still become a stop string is held back until it cannot. Optionally speculative
// (SpecOptions). Tested by tests/unit/engine/generate_test.cpp and speculative_test.cpp.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {

// Speculative decoding: tokens proposed ahead are checked in one batch, each against the token
// the sampler draws from the logits before it, and kept while they agree. With one sampler
// draw per generated token, in the same order, and batch-invariant kernels, the output is the
// same, token for token, as without (at any temperature, seed given); only the speed differs.
// Ngram: prompt lookup (engine/ngram_draft.h); Draft: a draft model (engine/model_draft.h).
enum class SpecMode { None, Ngram, Draft };

// "none", "ngram", "draft": the names of --spec and of a request's "spec"; nullopt for others.
std::optional<SpecMode> spec_mode_named(std::string_view name);
std::string_view spec_mode_name(SpecMode mode);

// What to draft with and how much: --spec, --draft-max, --draft-min, or a request's "spec",
// "draft_max", "draft_min".
struct SpecChoice {
  SpecMode mode = SpecMode::None;
  int32_t draft_max = 8;  // tokens proposed at most per step (fewer where they do not pay)
  // Tokens proposed at least per step where the lookup finds them. 0: the engine decodes
  // plainly while verifying drafts costs more than it saves (engine/draft_policy.h).
  int32_t draft_min = 0;
};

class ModelDrafter;

struct SpecOptions : SpecChoice {
  // SpecMode::Draft: the drafter, its draft model's session kept for the next calls (it
  // follows the context lazily). Not owned; must outlive the generate() call.
  ModelDrafter* drafter = nullptr;
};

struct GenerateOptions {
  int32_t n_predict = 128;  // < 0: until the context is full
  std::vector<std::string> stop;
  SamplerParams sampler;
  // When set and true (another thread or a signal handler sets it), generation ends after
  // the current token with StopReason::Cancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Only what this grammar allows (engine/constraint.h); null: no constraint. A grammar that
  // no token can continue ends the generation with StopReason::Length.
  std::shared_ptr<const grammar::Grammar> grammar;
  SpecOptions spec;
  // Tokens before the prompt, already in the session's KV cache (gufo chat's earlier turns, a
  // resumed session's context): the penalties look back into them and drafts are looked up
  // in them. Must outlive the generate() call.
  std::span<const int32_t> earlier;
  // A resumed session's sampler generator (Sampler::generator_state); empty: seeded from
  // sampler.seed.
  std::string_view generator_state;
};

enum class StopReason { Length, EndOfGeneration, StopString, ContextFull, Cancelled };
std::string_view stop_reason_name(StopReason reason);

// Wall time of the two phases, as llama.cpp reports them after a run.
struct GenerateTimings {
  int64_t prompt_tokens = 0;
  double prompt_seconds = 0;      // evaluating the prompt, to the first logits
  double generation_seconds = 0;  // from the first logits to the end (sampling included)
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated (the end token included, if any)
  StopReason reason = StopReason::Length;
  GenerateTimings timings;
  int64_t drafted = 0;          // tokens proposed by speculative decoding
  int64_t accepted = 0;         // of them, kept (each saved a forward step)
  std::string generator_state;  // the sampler's generator at the end, for a session file
};

// End-of-generation tokens of a vocabulary: EOS plus the control tokens chat models end a
// turn with (<|im_end|>, <|eot_id|>, <|eom_id|>, <|endoftext|>, <|end_of_text|>) if present.
std::vector<int32_t> end_of_generation_tokens(const tokenizer::Vocab& vocab);

// Keeps the longest tail of `text` that is a proper prefix of some stop string; returns how
// many leading bytes are safe to emit now. Sets `found` to the offset of a complete stop
// string, if one occurs.
size_t stop_safe_prefix(std::string_view text, std::span<const std::string> stops, size_t& found);
// The stop string that occurs at `found` in `text` (the first listed, if several do).
std::string_view stop_string_at(std::string_view text, size_t found, std::span<const std::string> stops);

Result<GenerateResult> generate(Session& session, const tokenizer::Tokenizer& tokenizer,
                                std::span<const int32_t> prompt, const GenerateOptions& options,
                                const std::function<void(std::string_view)>& on_text);

}  // namespace gufo::engine
