// POST /v1/messages and POST /v1/messages/count_tokens (see http_server.h): Anthropic's
// Messages API around the API-neutral generation (server/generation.h).
#include <httplib.h>

#include <memory>
#include <string>

#include "server/access_log.h"
#include "server/anthropic_request.h"
#include "server/anthropic_response.h"
#include "server/data_sink.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/json_text.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// What the one choice of a Messages request ended with.
struct Ending {
  engine::StopReason reason = engine::StopReason::EndOfGeneration;
  std::string stop_sequence;
  AnthropicUsage usage;
};

void record_ending(const engine::RequestEvent& done, Ending& ending) {
  ending.reason = done.reason;
  ending.stop_sequence = done.stop_string;
  ending.usage.input_tokens = done.prompt_tokens;
  ending.usage.output_tokens = done.completion_tokens;
  ending.usage.cache_read_input_tokens = done.cached_tokens;
  current_access_record().completion_tokens = done.completion_tokens;
}

bool write_message(httplib::DataSink& sink, const GenerationPlan& plan, const engine::RequestHandle& handle,
                   const std::string& model) {
  std::optional<CollectedAnswer> collected = collect_answer(handle, [&] { return write_all(sink, " "); });
  if (!collected) return false;
  if (!collected->error.empty()) {
    write_all(sink, dump(anthropic_error_body(generation_failed(collected->error))));
  } else {
    Ending ending;
    record_ending(collected->done, ending);
    const AnswerParts answer = whole_answer(plan, std::move(collected->text));
    write_all(sink, dump(message_json(new_message_id(), model, answer, anthropic_stop_reason(ending.reason, answer),
                                      ending.stop_sequence, ending.usage)));
  }
  sink.done();
  return true;
}

bool write_events(httplib::DataSink& sink, const GenerationPlan& plan, const engine::RequestHandle& handle,
                  const std::string& model) {
  AnthropicEventStream stream(new_message_id(), model);
  AnswerSplitter splitter(plan, /*stream_calls=*/true);
  if (!write_all(sink, stream.start(static_cast<int64_t>(plan.prompt.size()), 0))) return false;
  const std::optional<std::string> error = pump_events(
      handle, 1, [&] { return write_all(sink, AnthropicEventStream::ping()); },
      [&](engine::RequestEvent& event) {
        if (event.kind == engine::RequestEvent::Kind::Text) {
          const std::string out = stream.feed(splitter.feed(std::move(event.text)));
          return out.empty() || write_all(sink, out);
        }
        Ending ending;
        record_ending(event, ending);
        const AnswerParts rest = splitter.finish();
        const std::string stop = splitter.calls_complete() ? "tool_use" : anthropic_stop_reason(ending.reason, rest);
        return write_all(sink, stream.finish(rest, stop, ending.stop_sequence, ending.usage));
      });
  if (!error) return false;
  if (!error->empty())
    write_all(sink, "event: error\ndata: " + dump(anthropic_error_body(generation_failed(*error))) + "\n\n");
  sink.done();
  return true;
}

}  // namespace

void HttpServer::anthropic_messages(const httplib::Request& req, httplib::Response& res, bool count_only) {
  const std::string route = count_only ? "/v1/messages/count_tokens" : "/v1/messages";
  const auto fail = [&](const ApiError& error) { reply_error(res, route, error, ErrorShape::Anthropic); };
  std::optional<GenerationBody> body = read_generation_body(req, res, route, ErrorShape::Anthropic, !count_only);
  if (!body) return;
  const ServedModel* model = body->model;

  ParsedRequest parsed = parse_anthropic_request(body->json, RequestLimits{.n_vocab = model->n_vocab}, count_only);
  if (std::holds_alternative<ApiError>(parsed)) return fail(std::get<ApiError>(parsed));
  if (count_only) {
    auto prompt = render_prompt(*model, std::get<CompletionRequest>(parsed));
    if (std::holds_alternative<ApiError>(prompt)) return fail(std::get<ApiError>(prompt));
    const auto n = static_cast<int64_t>(std::get<std::vector<int32_t>>(prompt).size());
    return reply(res, route, 200, dump({{"input_tokens", n}}));
  }
  auto started = start_generation(*model, std::move(std::get<CompletionRequest>(parsed)), options_.separate_reasoning);
  if (std::holds_alternative<ApiError>(started)) return fail(std::get<ApiError>(started));
  const auto [plan, handle] = std::get<StartedGeneration>(std::move(started));

  current_access_record().prompt_tokens = static_cast<int64_t>(plan->prompt.size());
  counters_.count(route, 200);
  res.status = 200;
  const std::string name = model->name;
  if (!plan->request.stream) {
    res.set_chunked_content_provider("application/json", [=, holder = body->holder](size_t, httplib::DataSink& sink) {
      return write_message(sink, *plan, handle, name);
    });
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [=, holder = body->holder](size_t, httplib::DataSink& sink) {
    return write_events(sink, *plan, handle, name);
  });
}

}  // namespace gufo::server
