// The API-neutral half of generation routes (see generation.h).
#include "server/generation.h"

#include <algorithm>
#include <random>
#include <string_view>

#include "server/grammar_cache.h"
#include "server/tool_grammar.h"

namespace gufo::server {

namespace {

constexpr auto kHeartbeat = std::chrono::milliseconds(1000);

uint64_t random_seed() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

ApiError unavailable(std::string message) {
  return ApiError{.status = 503,
                  .message = std::move(message),
                  .type = "server_error",
                  .param = "",
                  .code = "",
                  .retry_after_seconds = 1};
}

}  // namespace

std::variant<std::vector<int32_t>, ApiError> render_prompt(const ServedModel& model, const CompletionRequest& request) {
  if (request.chat) {
    if (model.chat_prompt == nullptr) {
      return bad_request("this model has no chat template; use /v1/completions", "messages");
    }
    if (const Status depth = tmpl::check_json_depth(request.messages); !depth.ok()) {
      return bad_request("'messages': " + depth.error().message, "messages");
    }
    engine::PromptInputs inputs{.messages = request.messages,
                                .tools = request.tools,
                                .enable_thinking = request.enable_thinking,
                                .add_generation_prompt = true};
    Result<std::vector<int32_t>> tokens = model.chat_prompt->tokens(inputs);
    if (!tokens.ok())
      return bad_request("the chat template failed on these messages: " + tokens.error().message, "messages");
    return std::move(tokens).value();
  }
  std::vector<int32_t> prompt;
  const tokenizer::Vocab& vocab = model.tokenizer->vocab();
  if (vocab.add_bos && vocab.bos_id >= 0) prompt.push_back(vocab.bos_id);
  const std::vector<int32_t> body = model.tokenizer->encode(request.prompt, /*parse_special=*/true);
  prompt.insert(prompt.end(), body.begin(), body.end());
  if (prompt.empty()) return bad_request("'prompt' is empty", "prompt");
  return prompt;
}

PlannedGeneration plan_generation(const ServedModel& model, CompletionRequest request, bool separate_reasoning) {
  GenerationPlan plan;
  plan.request = std::move(request);
  plan.request.tool_syntax = model.tool_syntax;
  const CompletionRequest& r = plan.request;
  plan.prompt_param = r.chat ? "messages" : "prompt";
  auto rendered = render_prompt(model, r);
  if (std::holds_alternative<ApiError>(rendered)) return std::get<ApiError>(rendered);
  plan.prompt = std::move(std::get<std::vector<int32_t>>(rendered));
  if (r.chat) {
    plan.split_reasoning = r.separate_reasoning.value_or(separate_reasoning);
    // The last few prompt tokens are enough to see whether the template left "<think>" open.
    const Result<std::string> tail =
        model.tokenizer->decode(std::span<const int32_t>(plan.prompt).last(std::min<size_t>(plan.prompt.size(), 4)));
    plan.prompt_opened_thinking = tail.ok() && prompt_opens_thinking(*tail);
    plan.prompt_closed_thinking = tail.ok() && prompt_closes_thinking(*tail);
  }

  const engine::SchedulerOptions& engine_options = model.scheduler->options();
  if (r.n > engine_options.n_parallel + engine_options.max_queue) {
    return bad_request("'n' is " + std::to_string(r.n) + " but this server runs and queues at most " +
                           std::to_string(engine_options.n_parallel + engine_options.max_queue) + " sequences",
                       "n");
  }
  const int64_t n_prompt = static_cast<int64_t>(plan.prompt.size());
  if (n_prompt + 1 > model.n_ctx) {
    return bad_request("this model's context is " + std::to_string(model.n_ctx) + " tokens, but the " +
                           std::string(r.chat ? "messages come to " : "prompt is ") + std::to_string(n_prompt) +
                           " tokens (and at least one token must be generated)",
                       plan.prompt_param, "context_length_exceeded");
  }
  int32_t max_tokens = static_cast<int32_t>(model.n_ctx - n_prompt);
  if (r.max_tokens) {
    if (n_prompt + *r.max_tokens > model.n_ctx && !r.max_tokens_is_bound) {
      return bad_request("this model's context is " + std::to_string(model.n_ctx) + " tokens, but " +
                             std::to_string(n_prompt) + " prompt tokens plus max_tokens " +
                             std::to_string(*r.max_tokens) + " need " + std::to_string(n_prompt + *r.max_tokens),
                         "max_tokens", "context_length_exceeded");
    }
    max_tokens = std::min(max_tokens, *r.max_tokens);
  }
  std::shared_ptr<const grammar::Grammar> grammar;
  if (r.grammar) {
    Result<std::shared_ptr<const grammar::Grammar>> compiled = compiled_grammar(*r.grammar, r.grammar_syntax);
    if (!compiled.ok()) return bad_request("'" + r.grammar_param + "': " + compiled.error().message, r.grammar_param);
    grammar = std::move(compiled).value();
  }
  // With callable tools the tool grammar governs the answer (it holds the request's own
  // constraint as the alternative to calling, server/tool_grammar.h).
  Result<std::optional<ToolConstraint>> tools = tool_constraint(r);
  if (!tools.ok()) return bad_request("'tools': " + tools.error().message, "tools");
  if (tools->has_value()) {
    grammar = (*tools)->answer;
    plan.tool_calls_grammar = (*tools)->calls;
  }
  engine::SpecChoice spec{.mode = r.spec.value_or(model.spec.mode)};
  spec.draft_max = r.draft_max.value_or(std::max(model.spec.draft_max, r.draft_min.value_or(0)));
  spec.draft_min = r.draft_min.value_or(std::min(model.spec.draft_min, spec.draft_max));
  if (spec.draft_min > spec.draft_max) {
    return bad_request("'draft_min' (" + std::to_string(spec.draft_min) + ") is more than 'draft_max' (" +
                           std::to_string(spec.draft_max) + ")",
                       "draft_min");
  }
  if (const int32_t slots = model.scheduler->options().n_parallel; r.slot >= slots) {
    return bad_request("'id_slot' " + std::to_string(r.slot) + ": this server's slots are 0.." +
                           std::to_string(slots - 1) + " (-1: any)",
                       "id_slot");
  }
  if (r.slot >= 0 && r.n > 1) return bad_request("'id_slot' runs one choice; 'n' must be 1 with it", "id_slot");
  for (int32_t i = 0; i < r.n; ++i) {
    engine::RequestOptions options;
    options.spec = spec;
    options.slot = r.slot;
    options.max_tokens = max_tokens;
    options.stop = r.stop;
    options.sampler = r.sampler;
    options.sampler.penalty_last_n = static_cast<int32_t>(model.n_ctx);
    options.sampler.seed = r.seeded ? r.sampler.seed + static_cast<uint64_t>(i) : random_seed();
    options.top_logprobs = r.logprobs ? r.top_logprobs : -1;
    options.grammar = grammar;
    // Thoughts split off stay free; left in the content, they would break the constraint;
    // after a prompt that closed them, none may come.
    options.free_thinking = plan.split_reasoning && !plan.prompt_closed_thinking;
    options.thinking_open = plan.prompt_opened_thinking;
    plan.choices.push_back(std::move(options));
  }
  return plan;
}

std::variant<engine::RequestHandle, ApiError> submit_plan(const ServedModel& model, const GenerationPlan& plan) {
  return accepted_or_error(model.scheduler->submit(plan.prompt, plan.choices), plan.prompt_param);
}

std::variant<engine::RequestHandle, ApiError> accepted_or_error(engine::Submission submission,
                                                                const std::string& param) {
  switch (submission.status) {
    case engine::SubmitStatus::Accepted:
      return submission.handle;
    case engine::SubmitStatus::QueueFull:
      return ApiError{.status = 429,
                      .message = submission.message,
                      .type = "rate_limit_error",
                      .param = "",
                      .code = "rate_limit_exceeded",
                      .retry_after_seconds = 1};
    case engine::SubmitStatus::TooLong:
      return bad_request(submission.message, param, "context_length_exceeded");
    case engine::SubmitStatus::Invalid:
      return bad_request(submission.message, param);
    case engine::SubmitStatus::DeviceLost: {
      ApiError lost = unavailable(submission.message);
      lost.retry_after_seconds = 0;  // not a moment's pressure: this process will not serve again
      return lost;
    }
    case engine::SubmitStatus::ShuttingDown:
      break;
  }
  return unavailable(submission.message);
}

std::variant<StartedGeneration, ApiError> start_generation(const ServedModel& model, CompletionRequest request,
                                                           bool separate_reasoning) {
  PlannedGeneration planned = plan_generation(model, std::move(request), separate_reasoning);
  if (auto* error = std::get_if<ApiError>(&planned)) return std::move(*error);
  auto plan = std::make_shared<const GenerationPlan>(std::move(std::get<GenerationPlan>(planned)));
  auto submitted = submit_plan(model, *plan);
  if (auto* error = std::get_if<ApiError>(&submitted)) return std::move(*error);
  const engine::RequestHandle& handle = std::get<engine::RequestHandle>(submitted);
  if (std::optional<ApiError> failed = early_failure(handle)) return std::move(*failed);
  return StartedGeneration{.plan = std::move(plan), .handle = handle};
}

std::optional<ApiError> early_failure(const engine::RequestHandle& handle) {
  // NOTE(status): once the answer starts (heartbeats, or the first chunk) its status is 200
  // and a later failure can only be told in the body; a failure within the first heartbeat
  // (a failed allocation or a lost device at prefill) still gets its 500 here.
  std::optional<std::string> failed = handle->take_early_error(kHeartbeat);
  if (!failed) return std::nullopt;
  handle->cancel();
  return generation_failed(*failed);
}

std::optional<std::string> pump_events(const engine::RequestHandle& handle, int32_t n_choices,
                                       const std::function<bool()>& heartbeat,
                                       const std::function<bool(engine::RequestEvent&)>& on_event) {
  int32_t done = 0;
  while (done < n_choices) {
    std::optional<engine::RequestEvent> event = handle->next(kHeartbeat);
    bool client_there = true;
    if (!event) {
      client_there = heartbeat();
    } else if (event->kind == engine::RequestEvent::Kind::Error) {
      handle->cancel();
      return event->error;
    } else {
      if (event->kind == engine::RequestEvent::Kind::Done) ++done;
      client_there = on_event(*event);
    }
    if (!client_there) {
      handle->cancel();
      return std::nullopt;
    }
  }
  return std::string();
}

std::optional<CollectedAnswer> collect_answer(const engine::RequestHandle& handle,
                                              const std::function<bool()>& heartbeat) {
  CollectedAnswer answer;
  std::optional<std::string> error = pump_events(handle, 1, heartbeat, [&](engine::RequestEvent& event) {
    if (event.kind == engine::RequestEvent::Kind::Text) {
      answer.text += event.text;
    } else {
      answer.done = std::move(event);
    }
    return true;
  });
  if (!error) return std::nullopt;
  answer.error = std::move(*error);
  return answer;
}

AnswerSplitter::AnswerSplitter(const GenerationPlan& plan, bool stream_calls)
    : split_reasoning_(plan.split_reasoning),
      tools_(plan.request.chat && plan.request.tools.has_value()),
      callable_(plan.request.callable_tools),
      syntax_(plan.request.tool_syntax),
      calls_(plan.tool_calls_grammar),
      reasoning_(plan.prompt_opened_thinking) {
  // NOTE(tools): only where the tool grammar alone governs the text from a call's opening on
  // (its Calls and AfterText forms) is that text calls for sure while it is being written;
  // under OrAnswer it may be the request's own answer.
  if (stream_calls && tools_ && calls_ != nullptr && !plan.request.grammar) stream_.emplace(syntax_);
}

std::vector<ToolCallDelta> AnswerSplitter::stream_more() {
  if (!stream_ || refused_ || held_.find(tool_call_open(syntax_)) == std::string::npos) return {};
  if (!matcher_) {  // the calls start where is_tool_calls reads them: past blanks and Llama 3's tag
    const std::string_view calls = tool_calls_text(held_, syntax_);
    matched_ = static_cast<size_t>(calls.data() - held_.data()) + calls.find_first_not_of(" \t\r\n");
    matcher_.emplace(calls_);
  }
  // NOTE(tools): the grammar governs this text, so it accepts every byte; the check is for
  // text it does not govern after all (a </think> the model spelled in plain tokens ends the
  // reasoning here but not in the engine's constraint).
  const size_t from = matched_;
  while (matched_ < held_.size() && matcher_->accept_byte(static_cast<uint8_t>(held_[matched_]))) {
    ++matched_;
    if (matcher_->can_end()) complete_at_ = matched_;
  }
  refused_ = matched_ < held_.size();
  std::vector<ToolCallDelta> deltas = stream_->feed(std::string_view(held_).substr(from, matched_ - from));
  for (size_t i = 0; i < deltas.size(); ++i) {
    if (deltas[i].id.empty()) continue;
    if (!callable(deltas[i].name)) {
      deltas.resize(i);
      stream_->stop();
      break;
    }
    ++announced_;
  }
  return deltas;
}

AnswerParts AnswerSplitter::feed(std::string text) {
  AnswerParts out;
  if (split_reasoning_) {
    ReasoningDelta delta = reasoning_.feed(text);
    out.reasoning = std::move(delta.reasoning);
    text = std::move(delta.content);
  }
  if (!tools_) {
    out.content = std::move(text);
    return out;
  }
  const bool calling = held_.find(tool_call_open(syntax_)) != std::string::npos;
  held_ += text;
  size_t safe = calling ? 0 : content_before_tool_call(held_, syntax_);
  // Whitespace before a tool call is trimmed from the content: hold it until text follows.
  while (safe > 0 && std::string_view(" \t\r\n").find(held_[safe - 1]) != std::string_view::npos) --safe;
  out.content = held_.substr(0, safe);
  held_.erase(0, safe);
  out.call_deltas = stream_more();
  return out;
}

AnswerParts AnswerSplitter::finish() {
  AnswerParts out;
  if (split_reasoning_) {
    ReasoningDelta rest = reasoning_.finish();
    out.reasoning = std::move(rest.reasoning);
    held_ += rest.content;
  }
  if (!tools_ || held_.empty()) {
    out.content = std::move(held_);
    return out;
  }
  out.call_deltas = stream_more();
  if (streamed_calls()) {  // the calls went out as written, however far they got
    const size_t rest = held_.find_first_not_of(" \t\r\n", matched_);
    if (rest != std::string::npos) out.content = held_.substr(rest);  // what the grammar refused
    return out;
  }
  // Under a tool grammar, text that is not a whole match of the calls (an answer under the
  // request's own constraint, or calls cut short by max_tokens) is content, never calls.
  const std::string_view calls_text = tool_calls_text(held_, syntax_);
  if (calls_ != nullptr && !is_tool_calls(calls_, calls_text)) {
    out.content = std::move(held_);
    return out;
  }
  // Calls of the grammar's shape are read as a stream reads them, so that their arguments
  // are the same text whole or streamed.
  if (calls_ != nullptr) {
    std::optional<std::vector<ToolCall>> calls = calls_as_streamed(calls_text, syntax_);
    if (calls && std::all_of(calls->begin(), calls->end(), [&](const ToolCall& c) { return callable(c.name); })) {
      out.tool_calls = std::move(*calls);
      return out;
    }
  }
  ParsedAnswer answer = parse_tool_calls(held_, callable_, syntax_);
  out.content = std::move(answer.content);
  out.tool_calls = std::move(answer.tool_calls);
  return out;
}

bool AnswerSplitter::callable(const std::string& name) const {
  return std::find(callable_.begin(), callable_.end(), name) != callable_.end();
}

bool AnswerSplitter::calls_complete() const {
  return streamed_calls() && complete_at_ > 0 && held_.find_first_not_of(" \t\r\n", complete_at_) == std::string::npos;
}

// The same splitter, fed the whole text: a whole answer and a streamed one do not differ, but
// for calls cut short (max_tokens, a stop string), which a stream sends as far as they got
// and a whole answer returns as content.
AnswerParts whole_answer(const GenerationPlan& plan, std::string text) {
  AnswerSplitter splitter(plan);
  AnswerParts out = splitter.feed(std::move(text));
  AnswerParts rest = splitter.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  out.tool_calls = std::move(rest.tool_calls);
  return out;
}

}  // namespace gufo::server
