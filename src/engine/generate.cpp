// Generation loop (see generate.h).
#include "engine/generate.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/constraint.h"
#include "engine/draft_policy.h"
#include "engine/model_draft.h"
#include "engine/ngram_draft.h"

namespace gufo::engine {

std::optional<SpecMode> spec_mode_named(std::string_view name) {
  for (const SpecMode mode : {SpecMode::None, SpecMode::Ngram, SpecMode::Draft}) {
    if (name == spec_mode_name(mode)) return mode;
  }
  return std::nullopt;
}

std::string_view spec_mode_name(SpecMode mode) {
  switch (mode) {
    case SpecMode::None:
      return "none";
    case SpecMode::Ngram:
      return "ngram";
    case SpecMode::Draft:
      return "draft";
  }
  return "none";
}

std::string_view stop_reason_name(StopReason reason) {
  switch (reason) {
    case StopReason::Length:
      return "length";
    case StopReason::EndOfGeneration:
      return "eog";
    case StopReason::StopString:
      return "stop";
    case StopReason::ContextFull:
      return "context";
    case StopReason::Cancelled:
      return "cancelled";
  }
  return "?";
}

std::vector<int32_t> end_of_generation_tokens(const tokenizer::Vocab& vocab) {
  std::vector<int32_t> ids;
  if (vocab.eos_id >= 0) ids.push_back(vocab.eos_id);
  for (const char* text : {"<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|endoftext|>", "<|end_of_text|>"}) {
    const auto it = vocab.token_ids.find(std::string_view(text));
    if (it != vocab.token_ids.end() && vocab.types[static_cast<size_t>(it->second)] == tokenizer::TokenType::Control &&
        std::find(ids.begin(), ids.end(), it->second) == ids.end()) {
      ids.push_back(it->second);
    }
  }
  return ids;
}

std::string_view stop_string_at(std::string_view text, size_t found, std::span<const std::string> stops) {
  for (const std::string& stop : stops) {
    if (!stop.empty() && text.substr(found).starts_with(stop)) return stop;
  }
  return {};
}

size_t stop_safe_prefix(std::string_view text, std::span<const std::string> stops, size_t& found) {
  found = std::string_view::npos;
  for (const std::string& stop : stops) {
    if (stop.empty()) continue;
    const size_t at = text.find(stop);
    if (at != std::string_view::npos) found = std::min(found, at);
  }
  if (found != std::string_view::npos) return found;
  size_t safe = text.size();
  for (const std::string& stop : stops) {
    // The longest suffix of text that is a proper prefix of stop must wait.
    for (size_t len = std::min(stop.size() - 1, text.size()); len > 0; --len) {
      if (text.substr(text.size() - len) == std::string_view(stop).substr(0, len)) {
        safe = std::min(safe, text.size() - len);
        break;
      }
    }
  }
  return safe;
}

Result<GenerateResult> generate(Session& session, const tokenizer::Tokenizer& tokenizer,
                                std::span<const int32_t> prompt, const GenerateOptions& options,
                                const std::function<void(std::string_view)>& on_text) {
  GUFO_RETURN_IF_ERROR(validate(options.sampler));
  if (prompt.empty()) return Error{"generate: the prompt has no tokens"};
  if (options.spec.mode != SpecMode::None && options.spec.draft_max < 1) {
    return Error{"generate: draft_max must be at least 1"};
  }
  if (options.spec.mode != SpecMode::None &&
      (options.spec.draft_min < 0 || options.spec.draft_min > options.spec.draft_max)) {
    return Error{"generate: draft_min must be from 0 to draft_max"};
  }
  if (options.spec.mode == SpecMode::Draft && options.spec.drafter == nullptr) {
    return Error{"generate: speculative decoding with a draft model needs the draft model"};
  }
  const std::vector<int32_t> eog = end_of_generation_tokens(tokenizer.vocab());
  Sampler sampler(options.sampler);
  if (!options.generator_state.empty()) {
    Status restored = sampler.restore_generator(options.generator_state);
    if (!restored.ok()) return Error{"generate: the sampler's generator state: " + restored.error().message};
  }
  for (int32_t token : options.earlier) sampler.accept(token);
  for (int32_t token : prompt) sampler.accept(token);
  std::optional<Constraint> constraint;
  std::vector<float> masked;  // the constrained copy of each step's logits
  if (options.grammar)
    constraint.emplace(options.grammar, vocabulary_trie(tokenizer, eog), ThinkTokens{}, false, false);

  GenerateResult result;
  tokenizer::Detokenizer detokenizer(tokenizer);
  std::string pending;  // decoded text not yet emitted (may start a stop string)
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  GUFO_ASSIGN_OR_RETURN(std::vector<float> logits, session.eval(prompt, false));
  const Clock::time_point prompt_done = Clock::now();
  result.timings.prompt_tokens = static_cast<int64_t>(prompt.size());
  result.timings.prompt_seconds = std::chrono::duration<double>(prompt_done - started).count();
  const auto generation_seconds = [&] { return std::chrono::duration<double>(Clock::now() - prompt_done).count(); };
  const int64_t n_ctx = session.context_size();
  const size_t n_vocab = logits.size();

  // The last batch evaluated a token and then `drafts`; `logits` holds its rows, one a token,
  // and `row` is the one the next token is drawn from. The drafts after `row` are in the KV
  // cache but not (yet) kept; drop_unkept() takes them out.
  const bool drafting = options.spec.mode != SpecMode::None;
  const bool by_model = options.spec.mode == SpecMode::Draft;
  // NOTE(spec): a plain step's shadow draft costs a lookup (microseconds) or a draft model's
  // token, which for a small target on a few CPU cores costs most of a step, and more than its
  // own time: it evicts the target's weights from the caches (gufo-tiny on 2 cores: shadows
  // that took 1% of the time slowed generation by 5%). Shadows are asked for only while their
  // time stays within kShadowShare of the generation's, so that plain decoding stays within a
  // percent or two of decoding without drafts.
  constexpr double kShadowShare = 0.0025;
  double shadow_seconds = 0;
  double step_shadow_seconds = 0;  // the last step's shadow draft, left out of its timing
  std::vector<int32_t> history;    // what drafts are looked up in (only kept when drafting)
  std::optional<DraftPolicy> policy;
  if (drafting) {
    history.assign(options.earlier.begin(), options.earlier.end());
    history.insert(history.end(), prompt.begin(), prompt.end());
    policy.emplace(options.spec.draft_min, options.spec.draft_max, /*retry=*/options.spec.mode == SpecMode::Ngram);
  }
  // The drafts of `length` tokens after `history`, from the lookup or the draft model.
  // (Timed: what a drafted row costs at least; see DraftPolicy::record_proposal.)
  const auto propose = [&](int32_t length) -> Result<std::vector<int32_t>> {
    const Clock::time_point start = Clock::now();
    Result<std::vector<int32_t>> proposed =
        by_model ? options.spec.drafter->propose(history, length) : ngram_draft(history, length);
    policy->record_proposal(length, std::chrono::duration<double>(Clock::now() - start).count());
    return proposed;
  };
  std::vector<int32_t> drafts;
  size_t row = 0;
  // A step runs from choosing its drafts (the lookup included) to the sampling of the last row
  // it gave; none has run before the first token (drawn from the prompt's logits).
  std::optional<Clock::time_point> step_started;
  int32_t shadow = -1;  // what a plain step's lookup would have drafted (-1: nothing)
  const auto drop_unkept = [&] {
    session.rewind(session.n_past() - static_cast<int32_t>(drafts.size() - row));
    drafts.resize(row);
  };
  for (int32_t n = 0; options.n_predict < 0 || n < options.n_predict; ++n) {
    if (options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed)) {
      result.reason = StopReason::Cancelled;
      break;
    }
    const std::span<const float> row_logits(logits.data() + row * n_vocab, n_vocab);
    const std::optional<int32_t> next =
        constraint ? constraint->sample(sampler, row_logits, masked) : sampler.sample(row_logits);
    if (!next) break;  // nothing continues the grammar: Length
    const int32_t token = *next;
    sampler.accept(token);
    result.tokens.push_back(token);
    if (drafting) history.push_back(token);
    if (shadow >= 0) {
      policy->record_shadow(token == shadow);
      shadow = -1;
    }
    const bool kept = row < drafts.size() && drafts[row] == token;
    if (std::find(eog.begin(), eog.end(), token) != eog.end()) {
      result.reason = StopReason::EndOfGeneration;
      break;
    }
    GUFO_ASSIGN_OR_RETURN(std::string piece, detokenizer.push(token));
    pending += piece;
    size_t found = 0;
    const size_t safe = stop_safe_prefix(pending, options.stop, found);
    if (found != std::string::npos) {
      on_text(std::string_view(pending).substr(0, found));
      result.reason = StopReason::StopString;
      drop_unkept();
      result.timings.generation_seconds = generation_seconds();
      result.generator_state = sampler.generator_state();
      return result;
    }
    on_text(std::string_view(pending).substr(0, safe));
    pending.erase(0, safe);
    if (kept) {  // already evaluated, as the draft it was: its logits are the next row
      ++result.accepted;
      ++row;
      continue;
    }
    const size_t proposed = drafts.size();  // `row` of them kept
    drop_unkept();
    if (session.n_past() >= n_ctx) {
      result.reason = StopReason::ContextFull;
      break;
    }
    drafts.clear();
    if (drafting) {
      const Clock::time_point now = Clock::now();
      if (step_started) {
        // A plain step is timed without its shadow draft: shadows are rationed (above), so a
        // plain step costs that much without them, and a draft model's first shadow, which
        // catches up on the whole prompt, would make plain decoding look dear.
        const double seconds = std::chrono::duration<double>(now - *step_started).count() - step_shadow_seconds;
        policy->record(static_cast<int32_t>(proposed), static_cast<int32_t>(row), seconds);
      }
      step_started = now;
      step_shadow_seconds = 0;
      // Room for the drafts in the context, and no row past the last token to generate.
      const int32_t wanted = policy->next_length();
      int64_t length = std::min<int64_t>(wanted, n_ctx - session.n_past() - 1);
      if (options.n_predict >= 0) length = std::min<int64_t>(length, options.n_predict - n - 2);
      if (wanted == 0) {
        // Plain, but what the drafter would have drafted still says how often drafts are kept.
        if (shadow_seconds <= kShadowShare * generation_seconds()) {
          GUFO_ASSIGN_OR_RETURN(const std::vector<int32_t> guess, propose(1));
          if (!guess.empty()) shadow = guess[0];
          step_shadow_seconds = std::chrono::duration<double>(Clock::now() - now).count();
          shadow_seconds += step_shadow_seconds;
        }
      } else if (length > 0) {
        GUFO_ASSIGN_OR_RETURN(drafts, propose(static_cast<int32_t>(length)));
        // A draft model's output rows may run past the model's (padding): no draft from there.
        const auto beyond = std::find_if(drafts.begin(), drafts.end(),
                                         [&](int32_t id) { return id < 0 || static_cast<size_t>(id) >= n_vocab; });
        drafts.erase(beyond, drafts.end());
      }
    }
    row = 0;
    std::vector<int32_t> batch = {token};
    batch.insert(batch.end(), drafts.begin(), drafts.end());
    result.drafted += static_cast<int64_t>(drafts.size());
    GUFO_ASSIGN_OR_RETURN(logits, session.eval(batch, /*all_logits=*/!drafts.empty()));
  }
  drop_unkept();
  pending += detokenizer.finish();
  on_text(pending);
  result.timings.generation_seconds = generation_seconds();
  result.generator_state = sampler.generator_state();
  return result;
}

}  // namespace gufo::engine
