// POST /v1/responses (see http_server.h): OpenAI's Responses API around the API-neutral
// generation (server/generation.h), with previous_response_id served from the in-memory
// ResponseStore.
#include <httplib.h>

#include <ctime>
#include <memory>
#include <string>

#include "server/access_log.h"
#include "server/data_sink.h"
#include "server/generation.h"
#include "server/http_server.h"
#include "server/json_text.h"
#include "server/random_id.h"
#include "server/responses_request.h"
#include "server/responses_response.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// What outlives the route handler: the writer of the answer needs these.
struct ResponseJob {
  StartedGeneration started;
  ResponseMeta meta;
  ordered_json conversation;  // stored conversation + this input; the answer is added at the end
  bool store = true;
  ResponseStore* responses = nullptr;
  std::shared_ptr<const LoadedModel> holder;  // the model stays loaded while the answer is written
};

struct Ending {
  bool incomplete = false;
  ResponseUsage usage;
};

void record_ending(const engine::RequestEvent& done, Ending& ending) {
  ending.incomplete = response_incomplete(done.reason);
  ending.usage = {
      .input_tokens = done.prompt_tokens, .cached_tokens = done.cached_tokens, .output_tokens = done.completion_tokens};
  current_access_record().completion_tokens = done.completion_tokens;
}

void remember(ResponseJob& job, const AnswerParts& answer) {
  if (!job.store) return;
  job.conversation.push_back(assistant_message(answer));
  job.responses->put(job.meta.id, std::move(job.conversation));
}

bool write_response(httplib::DataSink& sink, ResponseJob& job) {
  std::optional<CollectedAnswer> collected = collect_answer(job.started.handle, [&] { return write_all(sink, " "); });
  if (!collected) return false;
  if (!collected->error.empty()) {
    write_all(sink, dump(generation_failed(collected->error).body()));
  } else {
    Ending ending;
    record_ending(collected->done, ending);
    const AnswerParts answer = whole_answer(*job.started.plan, std::move(collected->text));
    write_all(sink, dump(response_json(job.meta, output_items(answer), ending.incomplete, ending.usage)));
    remember(job, answer);
  }
  sink.done();
  return true;
}

bool write_response_events(httplib::DataSink& sink, ResponseJob& job) {
  ResponsesEventStream stream(job.meta);
  AnswerSplitter splitter(*job.started.plan, /*stream_calls=*/true);
  AnswerParts whole;  // what the store keeps
  const auto keep = [&whole](const AnswerParts& parts) {
    whole.reasoning += parts.reasoning;
    whole.content += parts.content;
    for (const ToolCallDelta& d : parts.call_deltas) append_delta(whole.tool_calls, d);  // streamed calls
  };
  if (!write_all(sink, stream.start())) return false;
  const std::optional<std::string> error = pump_events(
      job.started.handle, 1, [&] { return write_all(sink, ": keep-alive\n\n"); },
      [&](engine::RequestEvent& event) {
        if (event.kind == engine::RequestEvent::Kind::Text) {
          const AnswerParts parts = splitter.feed(std::move(event.text));
          keep(parts);
          const std::string out = stream.feed(parts);
          return out.empty() || write_all(sink, out);
        }
        Ending ending;
        record_ending(event, ending);
        const AnswerParts rest = splitter.finish();
        keep(rest);
        // A streamed call cut short is not kept as a call: the template would close it for the model.
        if (splitter.streamed_calls() && !splitter.calls_complete() && !whole.tool_calls.empty()) {
          whole.tool_calls.pop_back();
        }
        whole.tool_calls.insert(whole.tool_calls.end(), rest.tool_calls.begin(), rest.tool_calls.end());
        return write_all(sink, stream.finish(rest, ending.incomplete, ending.usage,
                                             !splitter.streamed_calls() || splitter.calls_complete()));
      });
  if (!error) return false;
  if (!error->empty()) {
    write_all(sink, "event: error\ndata: " + dump({{"type", "error"}, {"message", generation_failed(*error).message}}) +
                        "\n\n");
  } else {
    remember(job, whole);
  }
  sink.done();
  return true;
}

}  // namespace

void HttpServer::responses(const httplib::Request& req, httplib::Response& res) {
  const std::string route = "/v1/responses";
  const auto fail = [&](const ApiError& error) { reply_error(res, route, error); };
  std::optional<GenerationBody> read = read_generation_body(req, res, route, ErrorShape::OpenAI, false);
  if (!read) return;
  const ordered_json& body = read->json;
  const ServedModel* model = read->model;

  std::optional<ordered_json> previous;
  const auto previous_id = body.is_object() ? body.find("previous_response_id") : body.end();
  if (previous_id != body.end() && previous_id->is_string()) {
    previous = responses_.get(previous_id->get<std::string>());
    if (!previous) {
      return fail(bad_request("previous response '" + previous_id->get<std::string>() +
                                  "' is not stored here (never made, made with store: false, or evicted)",
                              "previous_response_id", "previous_response_not_found"));
    }
  }
  auto parsed =
      parse_responses_request(body, previous ? &*previous : nullptr, RequestLimits{.n_vocab = model->n_vocab});
  if (std::holds_alternative<ApiError>(parsed)) return fail(std::get<ApiError>(parsed));
  ResponsesRequest& request = std::get<ResponsesRequest>(parsed);
  auto job = std::make_shared<ResponseJob>();
  job->meta = {.id = random_id("resp_"),
               .model = model->name,
               .created_at = static_cast<int64_t>(std::time(nullptr)),
               .previous_response_id = request.previous_response_id,
               .instructions = request.instructions ? ordered_json(*request.instructions) : ordered_json()};
  job->conversation = previous ? std::move(*previous) : ordered_json::array();
  for (ordered_json& m : request.input_messages) job->conversation.push_back(std::move(m));
  job->store = request.store;
  job->responses = &responses_;
  job->holder = read->holder;
  const bool stream = request.request.stream;
  auto started = start_generation(*model, std::move(request.request), options_.separate_reasoning);
  if (std::holds_alternative<ApiError>(started)) return fail(std::get<ApiError>(started));
  job->started = std::get<StartedGeneration>(std::move(started));

  current_access_record().prompt_tokens = static_cast<int64_t>(job->started.plan->prompt.size());
  counters_.count(route, 200);
  res.status = 200;
  if (!stream) {
    res.set_chunked_content_provider("application/json",
                                     [job](size_t, httplib::DataSink& sink) { return write_response(sink, *job); });
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [job](size_t, httplib::DataSink& sink) { return write_response_events(sink, *job); });
}

}  // namespace gufo::server
