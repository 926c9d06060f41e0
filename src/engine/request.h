// What a client hands the serving engine (engine/scheduler.h) and what comes back: the
// options of one generation, and a stream of events (text as it becomes safe to show, with
// the tokens' log-probabilities when asked; then one final event with the stop reason and
// token counts; an embedding gets only the final one, with its vector). The engine thread
// produces events; a client thread consumes them and may cancel at any time.
// Tested through tests/unit/engine/scheduler_test.cpp and embedding_test.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/generate.h"
#include "engine/sampler.h"
#include "grammar/grammar.h"

namespace gufo::engine {

inline constexpr int32_t kMaxDraftTokens = 64;  // RequestOptions::spec.draft_max at most

struct RequestOptions {
  int32_t max_tokens = 128;  // >= 1
  std::vector<std::string> stop;
  SamplerParams sampler;
  int32_t top_logprobs = -1;  // < 0: no log-probabilities; else the chosen token's and this many more
  bool use_prefix_cache = true;
  // Constrained decoding: every token is one the grammar allows (grammar/token_matcher.h), and
  // an end token only once it is complete; null: no constraint.
  std::shared_ptr<const grammar::Grammar> grammar;
  // With a grammar: a leading <think>...</think> block is left free (the model thinks, then
  // answers under the grammar); thinking_open: the prompt has already opened it.
  bool free_thinking = false;
  bool thinking_open = false;
  // Speculative decoding: SpecMode::Ngram drafts by prompt lookup in the sequence's own tokens
  // (engine/ngram_draft.h), up to draft_max a step (at least draft_min where the lookup finds
  // them; 0: engine/draft_policy.h decides), verified in the same batch as everything else.
  // The output is the same token for token as without: each row is sampled in turn and a
  // draft is kept while it is the token drawn. The engine holds no draft model: SpecMode::Draft
  // is refused.
  SpecChoice spec;
  // The engine slot to run in (Scheduler, "Slots"), waiting while it is busy; -1: any.
  int32_t slot = -1;
};

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<int32_t, float>> top;  // most probable first
};

struct RequestEvent {
  enum class Kind { Text, Done, Error };
  Kind kind = Kind::Text;
  int32_t choice = 0;                  // which of the request's choices (OpenAI's n) this is about
  std::string text;                    // Text: new text (may be empty when only logprobs came)
  std::vector<TokenLogprob> logprobs;  // Text: the tokens generated since the last event
  // Done:
  StopReason reason = StopReason::Length;
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens whose keys and values came from the prefix cache
  int32_t completion_tokens = 0;
  int32_t drafted_tokens = 0;   // speculative decoding: tokens proposed and verified,
  int32_t accepted_tokens = 0;  // and of those the ones kept (part of completion_tokens)
  std::string stop_string;      // Done with StopReason::StopString: which one
  // Done of an embedding (Scheduler::submit_embeddings): the pooled final hidden state,
  // [n_embd], not normalized.
  std::vector<float> embedding;
  std::string error;  // Error: what went wrong (the request is over)

  static RequestEvent done(StopReason reason, int32_t prompt_tokens, int32_t cached_tokens, int32_t completion_tokens) {
    RequestEvent e;
    e.kind = Kind::Done;
    e.reason = reason;
    e.prompt_tokens = prompt_tokens;
    e.cached_tokens = cached_tokens;
    e.completion_tokens = completion_tokens;
    return e;
  }
  static RequestEvent failure(std::string message) {
    RequestEvent e;
    e.kind = Kind::Error;
    e.error = std::move(message);
    return e;
  }
  static RequestEvent text_of(std::string text, std::vector<TokenLogprob> logprobs) {
    RequestEvent e;
    e.text = std::move(text);
    e.logprobs = std::move(logprobs);
    return e;
  }
};

// Shared by the engine (producer) and one client (consumer).
class RequestChannel {
 public:
  void push(RequestEvent event) {
    {
      std::lock_guard lock(mutex_);
      events_.push_back(std::move(event));
    }
    ready_.notify_one();
  }
  // The next event, or none if `timeout` passes first.
  std::optional<RequestEvent> next(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
    RequestEvent event = std::move(events_.front());
    events_.pop_front();
    return event;
  }
  // Waits up to `timeout` for the first event. If it is an Error, takes it and returns its
  // message; any other event, or none in time, stays for next(). A server calls this before
  // it commits to a status, so that a request failing at once gets a 500, not a 200.
  std::optional<std::string> take_early_error(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (!ready_.wait_for(lock, timeout, [this] { return !events_.empty(); })) return std::nullopt;
    if (events_.front().kind != RequestEvent::Kind::Error) return std::nullopt;
    std::string message = std::move(events_.front().error);
    events_.pop_front();
    return message;
  }
  // Asks the engine to stop this request and free its cache blocks at the next step.
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<RequestEvent> events_;
  std::atomic<bool> cancelled_{false};
};

using RequestHandle = std::shared_ptr<RequestChannel>;

}  // namespace gufo::engine
