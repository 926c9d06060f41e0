// POST /v1/chat/completions and POST /v1/completions (see http_server.h): OpenAI's request
// and response shapes around the API-neutral generation (server/generation.h).
#include <httplib.h>

#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "server/access_log.h"
#include "server/data_sink.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/openai_request.h"
#include "server/openai_response.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// The whole answer as one JSON object. Whitespace before it is still the same JSON; writing
// it while waiting is how a vanished client is noticed.
bool write_whole(httplib::DataSink& sink, const GenerationPlan& plan, const engine::RequestHandle& handle,
                 const ResponseHeader& header, const tokenizer::Tokenizer& tokenizer) {
  const CompletionRequest& r = plan.request;
  std::vector<ChoiceState> choices(static_cast<size_t>(r.n));
  const std::optional<std::string> error = pump_events(
      handle, r.n, [&] { return write_all(sink, " "); },
      [&](engine::RequestEvent& event) {
        ChoiceState& c = choices[static_cast<size_t>(event.choice)];
        if (event.kind == engine::RequestEvent::Kind::Text) {
          c.text += event.text;
          c.logprobs.insert(c.logprobs.end(), event.logprobs.begin(), event.logprobs.end());
        } else {
          c.finish_reason = finish_reason_name(event.reason);
          c.completion_tokens = event.completion_tokens;
          c.cached_tokens = event.cached_tokens;
          c.drafted_tokens = event.drafted_tokens;
          c.accepted_tokens = event.accepted_tokens;
        }
        return true;
      });
  if (!error) return false;
  int64_t generated = 0;
  for (ChoiceState& c : choices) {
    generated += c.completion_tokens;
    AnswerParts parts = whole_answer(plan, std::move(c.text));
    c.reasoning = std::move(parts.reasoning);
    c.text = std::move(parts.content);
    c.tool_calls = std::move(parts.tool_calls);
    if (!c.tool_calls.empty() && c.finish_reason == "stop") c.finish_reason = "tool_calls";
  }
  current_access_record().completion_tokens = generated;
  if (!error->empty()) {
    write_all(sink, dump(generation_failed(*error).body()));
  } else {
    write_all(sink, dump(completion_json(header, r.chat, choices, r.logprobs, tokenizer,
                                         static_cast<int32_t>(plan.prompt.size()))));
  }
  sink.done();
  return true;
}

// The answer as server-sent events: chunks of reasoning, content and tool calls as they come
// (calls the tool grammar forces stream as deltas; others come whole at the end of their
// choice), then usage (if asked) and [DONE].
bool write_stream(httplib::DataSink& sink, const GenerationPlan& plan, const engine::RequestHandle& handle,
                  const ResponseHeader& header, const tokenizer::Tokenizer& tokenizer) {
  const CompletionRequest& r = plan.request;
  const auto send = [&](const ordered_json& chunk) { return write_all(sink, "data: " + dump(chunk) + "\n\n"); };
  std::vector<size_t> offsets(static_cast<size_t>(r.n), 0);
  std::vector<AnswerSplitter> splitters(static_cast<size_t>(r.n), AnswerSplitter(plan, /*stream_calls=*/true));
  // A content or reasoning delta of one choice, then its tool-call pieces (nothing to send: true).
  const auto send_delta = [&](int32_t choice, const AnswerParts& parts, const std::vector<engine::TokenLogprob>* lp) {
    if (!parts.content.empty() || !parts.reasoning.empty() || (lp != nullptr && !lp->empty())) {
      if (!send(chunk_json(header, r.chat, choice, parts.content, parts.reasoning, lp, "", false, r.include_usage,
                           tokenizer, offsets[static_cast<size_t>(choice)]))) {
        return false;
      }
      offsets[static_cast<size_t>(choice)] += parts.content.size();
    }
    return parts.call_deltas.empty() ||
           send(tool_call_deltas_chunk_json(header, choice, parts.call_deltas, r.include_usage));
  };
  if (r.chat) {
    for (int32_t i = 0; i < r.n; ++i) {
      if (!send(chunk_json(header, true, i, "", "", nullptr, "", true, r.include_usage, tokenizer, 0))) return false;
    }
  }
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;
  DraftUsage drafts;
  const std::optional<std::string> error = pump_events(
      handle, r.n, [&] { return write_all(sink, ": keep-alive\n\n"); },
      [&](engine::RequestEvent& event) {
        AnswerSplitter& splitter = splitters[static_cast<size_t>(event.choice)];
        if (event.kind == engine::RequestEvent::Kind::Text) {
          return send_delta(event.choice, splitter.feed(std::move(event.text)), r.logprobs ? &event.logprobs : nullptr);
        }
        std::string finish = finish_reason_name(event.reason);
        AnswerParts rest = splitter.finish();
        if (!send_delta(event.choice, rest, nullptr)) return false;
        if (!rest.tool_calls.empty() &&
            !send(tool_calls_chunk_json(header, event.choice, rest.tool_calls, r.include_usage))) {
          return false;
        }
        if ((!rest.tool_calls.empty() || splitter.calls_complete()) && finish == "stop") finish = "tool_calls";
        completion_tokens += event.completion_tokens;
        drafts.drafted += event.drafted_tokens;
        drafts.accepted += event.accepted_tokens;
        if (event.choice == 0) cached_tokens = event.cached_tokens;
        const std::vector<engine::TokenLogprob> none;
        return send(chunk_json(header, r.chat, event.choice, "", "", r.logprobs ? &none : nullptr, finish, false,
                               r.include_usage, tokenizer, offsets[static_cast<size_t>(event.choice)]));
      });
  if (!error) return false;
  current_access_record().completion_tokens = completion_tokens;
  if (!error->empty()) {
    send(generation_failed(*error).body());
  } else if (r.include_usage) {
    send(usage_chunk_json(
        header, r.chat,
        usage_json(static_cast<int32_t>(plan.prompt.size()), completion_tokens, cached_tokens, drafts)));
  }
  write_all(sink, "data: [DONE]\n\n");
  sink.done();
  return true;
}

}  // namespace

void HttpServer::completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  const std::string route = chat ? "/v1/chat/completions" : "/v1/completions";
  const auto fail = [&](const ApiError& error) { reply_error(res, route, error); };
  std::optional<GenerationBody> body = read_generation_body(req, res, route, ErrorShape::OpenAI, false);
  if (!body) return;
  const ServedModel* model = body->model;

  ParsedRequest parsed = parse_completion_request(body->json, chat, RequestLimits{.n_vocab = model->n_vocab});
  if (std::holds_alternative<ApiError>(parsed)) return fail(std::get<ApiError>(parsed));
  auto started = start_generation(*model, std::move(std::get<CompletionRequest>(parsed)), options_.separate_reasoning);
  if (std::holds_alternative<ApiError>(started)) return fail(std::get<ApiError>(started));
  const auto [plan, handle] = std::get<StartedGeneration>(std::move(started));

  current_access_record().prompt_tokens = static_cast<int64_t>(plan->prompt.size());
  const ResponseHeader header{
      .id = new_response_id(chat), .model = model->name, .created = static_cast<int64_t>(std::time(nullptr))};
  const tokenizer::Tokenizer* tokenizer = model->tokenizer;
  counters_.count(route, 200);
  res.status = 200;
  if (!plan->request.stream) {
    res.set_chunked_content_provider("application/json", [=, holder = body->holder](size_t, httplib::DataSink& sink) {
      return write_whole(sink, *plan, handle, header, *tokenizer);
    });
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [=, holder = body->holder](size_t, httplib::DataSink& sink) {
    return write_stream(sink, *plan, handle, header, *tokenizer);
  });
}

}  // namespace gufo::server
