// The half of a generation route that does not depend on the API it speaks. The OpenAI and
// Anthropic parsers both produce a CompletionRequest; plan_generation renders and checks it
// against the model (template, context, n) into prompt tokens and engine choices;
// pump_events reads the engine's events with a heartbeat that notices a vanished client;
// AnswerSplitter turns one choice's streamed text into reasoning, content and tool calls,
// and whole_answer does the same for a finished text. Routes only translate wire formats.
// Tested through tests/functional (every route, whole and streamed).
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engine/chat_prompt.h"
#include "engine/request.h"
#include "engine/scheduler.h"
#include "grammar/matcher.h"
#include "model/hparams.h"
#include "server/api_error.h"
#include "server/openai_request.h"
#include "server/reasoning.h"
#include "server/tool_call_stream.h"
#include "server/tool_calls.h"
#include "tokenizer/tokenizer.h"

namespace gufo::server {

// What the server serves once the model is loaded.
struct ServedModel {
  std::string name;  // the id /v1/models reports and responses carry
  engine::Scheduler* scheduler = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  const engine::ChatPrompt* chat_prompt = nullptr;  // null: the model has no chat template
  int64_t n_ctx = 0;
  int32_t n_vocab = 0;                            // logits per token (logit_bias keys must be below)
  int64_t n_embd = 0;                             // an embedding's width (before `dimensions`)
  model::Pooling pooling = model::Pooling::Mean;  // how /v1/embeddings pools (the GGUF's, or --pooling)
  ToolSyntax tool_syntax = ToolSyntax::Hermes;    // how its template writes tool calls (tool_syntax_of)
  // Speculative decoding for requests that do not say (gufo serve --spec, --draft-max, --draft-min).
  engine::SpecChoice spec;
  // Who computed its keys and values, for the session files of the slot API (server/slots.h).
  engine::SessionIdentity session;
};

// A request made ready for the engine.
struct GenerationPlan {
  CompletionRequest request;
  std::vector<int32_t> prompt;
  std::vector<engine::RequestOptions> choices;
  bool split_reasoning = false;         // chat: thoughts go apart from the content
  bool prompt_opened_thinking = false;  // the template ended the prompt inside <think>
  bool prompt_closed_thinking = false;  // ... or after an empty <think></think> (thinking off)
  std::string prompt_param;             // the field a prompt problem is reported against
  // With callable tools: the grammar of the calls alone, which the answer's text from its
  // first call opening ("<tool_call>"; `{"name": ` for Llama 3) on must match whole to be
  // returned as tool calls.
  std::shared_ptr<const grammar::Grammar> tool_calls_grammar;
};

using PlannedGeneration = std::variant<GenerationPlan, ApiError>;

// Renders the prompt (chat template, or raw text with BOS) and checks it against the
// context; one engine choice per `n`, each with its own seed unless the request gave one.
PlannedGeneration plan_generation(const ServedModel& model, CompletionRequest request, bool separate_reasoning);

// Only the prompt's tokens (Anthropic's count_tokens): the same rendering, no checks of
// the answer's budget.
std::variant<std::vector<int32_t>, ApiError> render_prompt(const ServedModel& model, const CompletionRequest& request);

// Submits the plan; a full queue is a 429 (retry_after set), a shutting-down engine a 503.
std::variant<engine::RequestHandle, ApiError> submit_plan(const ServedModel& model, const GenerationPlan& plan);
// The handle of an accepted submission, or its refusal as the API error (400s name `param`).
std::variant<engine::RequestHandle, ApiError> accepted_or_error(engine::Submission submission,
                                                                const std::string& param);

// plan_generation + submit_plan: the plan (shared with the writer of the answer) and the
// engine's handle for its events.
struct StartedGeneration {
  std::shared_ptr<const GenerationPlan> plan;
  engine::RequestHandle handle;
};
std::variant<StartedGeneration, ApiError> start_generation(const ServedModel& model, CompletionRequest request,
                                                           bool separate_reasoning);

// Reads `handle`'s events for `n_choices` choices, handing each to `on_event` (which returns
// false when the client is gone). While none come for a second, `heartbeat` writes
// something harmless (false: the client is gone). Returns the engine's error message if
// the generation failed, "" when every choice finished; a gone client cancels the request
// and returns nullopt.
std::optional<std::string> pump_events(const engine::RequestHandle& handle, int32_t n_choices,
                                       const std::function<bool()>& heartbeat,
                                       const std::function<bool(engine::RequestEvent&)>& on_event);

// The 500 of a generation that failed in the engine.
inline ApiError generation_failed(const std::string& error) {
  return ApiError{
      .status = 500, .message = "generation failed: " + error, .type = "server_error", .param = "", .code = ""};
}

// The 500 of a request whose first event, within a heartbeat, is its failure; nothing when it
// started well or is still running (then the answer may begin, with status 200).
std::optional<ApiError> early_failure(const engine::RequestHandle& handle);

// A one-choice generation read to its end: the text, and the final event (its stop reason
// and token counts). `error` is the engine's message if it failed; nullopt: the client went.
struct CollectedAnswer {
  std::string error;
  std::string text;
  engine::RequestEvent done;
};
std::optional<CollectedAnswer> collect_answer(const engine::RequestHandle& handle,
                                              const std::function<bool()>& heartbeat);

// One choice's answer in its parts.
struct AnswerParts {
  std::string reasoning;
  std::string content;
  std::vector<ToolCall> tool_calls;        // whole calls (at the end)
  std::vector<ToolCallDelta> call_deltas;  // or calls as they stream (AnswerSplitter's stream_calls)
};

// One choice's text as it streams: thoughts split off (plan.split_reasoning) and, when the
// request offered tools, content from the first call opening on held back. With stream_calls,
// calls that the tool grammar forces (tool_choice auto, required or named, without a
// response_format of the request's own) go out as deltas while they are written, as far as
// the calls grammar accepts them (a call cut short by max_tokens or a stop string stays as far
// as it got, as OpenAI's does; calls_complete() tells); otherwise the calls are parsed at the
// end, and text that is not whole calls stays content.
class AnswerSplitter {
 public:
  explicit AnswerSplitter(const GenerationPlan& plan, bool stream_calls = false);
  // What can be sent now.
  AnswerParts feed(std::string text);
  // The rest: what was held back, and the tool calls not streamed.
  AnswerParts finish();
  // Whether calls went out as deltas, and whether they are whole calls (all the text there is).
  bool streamed_calls() const { return announced_ > 0; }
  bool calls_complete() const;

 private:
  bool split_reasoning_;
  bool tools_;
  std::span<const std::string> callable_;
  ToolSyntax syntax_;
  std::shared_ptr<const grammar::Grammar> calls_;
  ReasoningSplitter reasoning_;
  std::string held_;  // content from the first call opening (or what may start one) on
  std::optional<ToolCallStream> stream_;
  std::optional<grammar::Matcher> matcher_;  // the calls grammar over what stream_ was fed
  size_t matched_ = 0;                       // held_'s bytes up to here were accepted and fed to stream_
  size_t complete_at_ = 0;                   // the end of the longest accepted text that is whole calls
  bool refused_ = false;                     // the grammar refused held_'s byte at matched_: nothing more streams
  int announced_ = 0;                        // calls whose first delta went out
  // The deltas of held_'s bytes past matched_ that the calls grammar accepts (none from a call
  // to a tool not callable on: then no more are streamed).
  std::vector<ToolCallDelta> stream_more();
  bool callable(const std::string& name) const;  // the request made this tool callable
};

// A finished choice's text in its parts (the non-streaming answer): exactly what the
// AnswerSplitter gives for it in pieces.
AnswerParts whole_answer(const GenerationPlan& plan, std::string text);

}  // namespace gufo::server
