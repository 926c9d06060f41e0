// HttpServer (see http_server.h).
#include "server/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include <ctime>
#include <random>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "server/access_log.h"
#include "server/listen_socket.h"
#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/reasoning.h"
#include "server/tool_calls.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

constexpr auto kHeartbeat = std::chrono::milliseconds(1000);

// Compares in time that depends on the lengths only, not on where the strings differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

// RFC 7235: the scheme is case-insensitive and one or more spaces follow it.
std::optional<std::string_view> bearer_token(std::string_view header) {
  constexpr std::string_view kScheme = "bearer";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  const size_t key = header.find_first_not_of(' ', kScheme.size());
  if (key == kScheme.size() || key == std::string_view::npos) return std::nullopt;
  return header.substr(key);
}

// Metrics are labelled by route, never by the raw path a client sent (an unbounded set).
std::string route_label(const httplib::Request& req) {
  static constexpr std::string_view kRoutes[] = {"/health", "/ready", "/metrics", "/v1/models",
                                                 "/v1/chat/completions", "/v1/completions"};
  for (const std::string_view route : kRoutes) {
    if (req.path == route) return std::string(route);
  }
  if (req.path.starts_with("/v1/models/")) return "/v1/models/{id}";
  return "other";
}

uint64_t random_seed() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng();
}

bool write_all(httplib::DataSink& sink, const std::string& data) { return sink.write(data.data(), data.size()); }

// What one request asks the engine for, after checks and rendering.
struct Plan {
  CompletionRequest request;
  std::vector<int32_t> prompt;
  std::vector<engine::RequestOptions> choices;
  bool split_reasoning = false;          // chat: thoughts go to reasoning_content
  bool prompt_opened_thinking = false;   // the template ended the prompt inside <think>
};

}  // namespace

HttpServer::HttpServer(ServerOptions options) : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
  const int threads = std::max(8, options_.http_threads);
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
  http_->set_payload_max_length(options_.max_body_bytes);
  http_->set_read_timeout(30, 0);
  http_->set_write_timeout(30, 0);
  // NOTE(http): httplib closes an idle connection after 5 s and after 5 requests by default;
  // clients that reuse connections (OpenAI's, via undici) then race the close and see
  // "connection reset". Idle connections close after 30 s here, long after clients give
  // theirs up (undici: 4 s), and a connection serves any number of requests.
  http_->set_keep_alive_timeout(30);
  http_->set_keep_alive_max_count(std::numeric_limits<size_t>::max());
  // NOTE(http): with Nagle's algorithm on, the last small write of an answer waits for the
  // client's delayed ACK (40 ms on Linux) on a kept-alive connection. Accepted sockets
  // inherit TCP_NODELAY from the listening one.
  http_->set_tcp_nodelay(true);
  http_->set_socket_options(exclusive_socket_options);
  routes();
}

HttpServer::~HttpServer() { stop(); }

Result<int> HttpServer::bind() {
  int port = options_.port;
  if (port == 0) {
    port = http_->bind_to_any_port(options_.host);
    if (port < 0) return Error{"cannot listen on " + options_.host + ": " + describe_bind_failure(options_.host, 0)};
  } else if (!http_->bind_to_port(options_.host, port)) {
    return Error{"cannot listen on " + options_.host + ":" + std::to_string(port) + ": " +
                 describe_bind_failure(options_.host, port)};
  }
  widen_listen_backlog(port);
  port_ = port;
  return port;
}

void HttpServer::serve() {
  serving_.store(true);
  if (!stopping_.load()) http_->listen_after_bind();
  served_.store(true);
}

void HttpServer::set_model(const ServedModel& model) {
  model_ = model;
  ready_.store(true, std::memory_order_release);
}

// NOTE(http): httplib's stop() does nothing unless the listening loop already runs, and
// the loop then never ends. serve() and stop() each set their flag before reading the
// other's (both sequentially consistent), so either serve() sees the stop and does not
// listen, or stop() sees serve() and waits for the loop to run before stopping it.
void HttpServer::stop() {
  stopping_.store(true);
  if (!serving_.load()) return;
  while (!served_.load() && !http_->is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (served_.load() || stop_sent_.exchange(true)) return;  // twice would close an invalid socket
  http_->stop();
  // The answers still being written finish first (the engine is shut down, so they end
  // soon); then the idle kept-alive connections are ended.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop_reading_connections(port_);
}

void HttpServer::reply(httplib::Response& res, const std::string& route, int status, const std::string& body,
                       const char* content_type) {
  res.status = status;
  res.set_content(body, content_type);
  counters_.count(route, status);
}

bool HttpServer::authorized(const httplib::Request& req, httplib::Response& res, const std::string& route) {
  if (options_.api_key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::optional<std::string_view> key = bearer_token(header);
  if (key && constant_time_equal(*key, options_.api_key)) return true;
  const ApiError error{.status = 401,
                       .message = header.empty() ? "no API key given (send 'Authorization: Bearer <key>')"
                                  : key         ? "incorrect API key"
                                                : "the Authorization header is not 'Bearer <key>'",
                       .type = "invalid_request_error", .param = "", .code = "invalid_api_key"};
  res.set_header("WWW-Authenticate", "Bearer");
  reply(res, route, 401, dump(error.body()));
  return false;
}

const ServedModel* HttpServer::find_model(const std::string& name, httplib::Response& res, const std::string& route) {
  if (name.empty() || name == model_.name) return &model_;
  const ApiError error{.status = 404,
                       .message = "the model '" + name + "' does not exist; this server has '" + model_.name + "'",
                       .type = "invalid_request_error", .param = "model", .code = "model_not_found"};
  reply(res, route, 404, dump(error.body()));
  return nullptr;
}

void HttpServer::routes() {
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    reply(res, "/health", 200, R"({"status":"ok"})");
  });
  http_->Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = ready_.load(std::memory_order_acquire) && !stopping_.load();
    reply(res, "/ready", ready ? 200 : 503, ready ? R"({"status":"ready"})" : R"({"status":"loading"})");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    engine::EngineStats stats;
    if (ready_.load(std::memory_order_acquire)) stats = model_.scheduler->stats();
    counters_.count("/metrics", 200);
    res.status = 200;
    res.set_content(render_metrics(stats, counters_.snapshot()), "text/plain; version=0.0.4");
  });
  const auto model_json = [](const ServedModel& m) {
    return ordered_json{{"id", m.name}, {"object", "model"}, {"created", 0}, {"owned_by", "gufo"},
                        {"max_model_len", m.n_ctx}};
  };
  http_->Get("/v1/models", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res, "/v1/models")) return;
    ordered_json data = ordered_json::array();
    if (ready_.load(std::memory_order_acquire)) data.push_back(model_json(model_));
    reply(res, "/v1/models", 200, dump({{"object", "list"}, {"data", data}}));
  });
  http_->Get(R"(/v1/models/(.+))", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    const std::string route = "/v1/models/{id}";
    if (!authorized(req, res, route)) return;
    if (!ready_.load(std::memory_order_acquire)) {
      res.set_header("Retry-After", "1");
      const ApiError e{.status = 503, .message = "the model is still loading", .type = "server_error", .param = "", .code = ""};
      return reply(res, route, 503, dump(e.body()));
    }
    if (const ServedModel* m = find_model(req.matches[1].str(), res, route)) reply(res, route, 200, dump(model_json(*m)));
  });
  http_->Post("/v1/chat/completions",
              [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, true); });
  http_->Post("/v1/completions",
              [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, false); });
  // httplib answers some errors itself (404, 413 body too large, 400 bad request line):
  // give them OpenAI's error body too.
  http_->set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    ApiError error{.status = res.status, .message = "", .type = "invalid_request_error", .param = "", .code = ""};
    if (res.status == 404) {
      error.message = "no route " + req.method + " " + req.path;
      error.code = "not_found";
    } else if (res.status == 413) {
      // httplib caps form-encoded bodies (what `curl -d` sends by default) at 8192 bytes.
      const bool form = req.get_header_value("Content-Type").starts_with("application/x-www-form-urlencoded");
      error.message = form ? "a form-encoded request body is limited to 8192 bytes: send JSON with "
                             "'Content-Type: application/json'"
                           : "the request body is larger than " + std::to_string(options_.max_body_bytes) + " bytes";
      error.code = "request_too_large";
    } else {
      error.message = "HTTP error " + std::to_string(res.status);
    }
    counters_.count(route_label(req), res.status);
    res.set_content(dump(error.body()), "application/json");
  });
  http_->set_exception_handler([this](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = std::string("internal error: ") + e.what();
    } catch (...) {
    }
    const ApiError error{.status = 500, .message = what, .type = "server_error", .param = "", .code = ""};
    reply(res, route_label(req), 500, dump(error.body()));
  });
  // The logger runs after an answer's last byte, for every request (routed or not).
  http_->set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
    current_access_record() = AccessRecord{.start = std::chrono::steady_clock::now(), .routed = true};
    in_flight_.fetch_add(1);
    return httplib::Server::HandlerResponse::Unhandled;
  });
  http_->set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    AccessRecord& record = current_access_record();
    const auto now = std::chrono::steady_clock::now();
    if (options_.access_log) {
      // A request httplib refused before routing (a bad request line) has no record of its own.
      const AccessRecord shown = record.routed ? record : AccessRecord{.start = now};
      std::fputs(access_log_line(req.remote_addr, req.method, req.path, res.status, shown, now).c_str(), stderr);
    }
    if (std::exchange(record.routed, false)) in_flight_.fetch_sub(1);
  });
}

void HttpServer::completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  const std::string route = chat ? "/v1/chat/completions" : "/v1/completions";
  if (!authorized(req, res, route)) return;
  const auto fail = [&](const ApiError& error) { reply(res, route, error.status, dump(error.body())); };
  if (stopping_.load()) {
    return fail({.status = 503, .message = "the server is shutting down", .type = "server_error", .param = "", .code = ""});
  }
  if (!ready_.load(std::memory_order_acquire)) {
    res.set_header("Retry-After", "1");
    return fail({.status = 503, .message = "the model is still loading", .type = "server_error", .param = "", .code = ""});
  }
  ordered_json body;
  try {
    body = ordered_json::parse(req.body);
  } catch (const ordered_json::parse_error& e) {
    return fail(bad_request(std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json"));
  }
  const auto named = body.is_object() ? body.find("model") : body.end();
  const ServedModel* found = find_model(named != body.end() && named->is_string() ? named->get<std::string>() : "",
                                        res, route);
  if (found == nullptr) return;
  const ServedModel& model = *found;
  const RequestLimits limits{.n_vocab = model.n_vocab};
  ParsedRequest parsed = parse_completion_request(body, chat, limits);
  if (std::holds_alternative<ApiError>(parsed)) return fail(std::get<ApiError>(parsed));
  Plan plan{.request = std::move(std::get<CompletionRequest>(parsed)), .prompt = {}, .choices = {}};
  const CompletionRequest& request = plan.request;

  if (chat) {
    if (model.chat_prompt == nullptr) {
      return fail(bad_request("this model has no chat template; use /v1/completions", "messages"));
    }
    if (const Status depth = tmpl::check_json_depth(request.messages); !depth.ok()) {
      return fail(bad_request("'messages': " + depth.error().message, "messages"));
    }
    engine::PromptInputs inputs{.messages = request.messages, .tools = request.tools,
                                .enable_thinking = request.enable_thinking, .add_generation_prompt = true};
    Result<std::vector<int32_t>> tokens = model.chat_prompt->tokens(inputs);
    if (!tokens.ok()) return fail(bad_request("the chat template failed on these messages: " + tokens.error().message, "messages"));
    plan.prompt = std::move(tokens).value();
    plan.split_reasoning = request.separate_reasoning.value_or(options_.separate_reasoning);
    // The last few prompt tokens are enough to see whether the template left "<think>" open.
    const Result<std::string> tail =
        model.tokenizer->decode(std::span<const int32_t>(plan.prompt).last(std::min<size_t>(plan.prompt.size(), 4)));
    plan.prompt_opened_thinking = tail.ok() && prompt_opens_thinking(*tail);
  } else {
    const tokenizer::Vocab& vocab = model.tokenizer->vocab();
    if (vocab.add_bos && vocab.bos_id >= 0) plan.prompt.push_back(vocab.bos_id);
    const std::vector<int32_t> body_tokens = model.tokenizer->encode(request.prompt, /*parse_special=*/true);
    plan.prompt.insert(plan.prompt.end(), body_tokens.begin(), body_tokens.end());
    if (plan.prompt.empty()) return fail(bad_request("'prompt' is empty", "prompt"));
  }

  const engine::SchedulerOptions& engine_options = model.scheduler->options();
  if (request.n > engine_options.n_parallel + engine_options.max_queue) {
    return fail(bad_request("'n' is " + std::to_string(request.n) + " but this server runs and queues at most " +
                                std::to_string(engine_options.n_parallel + engine_options.max_queue) + " sequences",
                            "n"));
  }
  const int64_t n_prompt = static_cast<int64_t>(plan.prompt.size());
  const std::string prompt_param = chat ? "messages" : "prompt";
  if (n_prompt + 1 > model.n_ctx) {
    return fail(bad_request("this model's context is " + std::to_string(model.n_ctx) + " tokens, but the " +
                                std::string(chat ? "messages come to " : "prompt is ") + std::to_string(n_prompt) +
                                " tokens (and at least one token must be generated)",
                            prompt_param, "context_length_exceeded"));
  }
  int32_t max_tokens = static_cast<int32_t>(model.n_ctx - n_prompt);
  if (request.max_tokens) {
    if (n_prompt + *request.max_tokens > model.n_ctx) {
      return fail(bad_request("this model's context is " + std::to_string(model.n_ctx) + " tokens, but " +
                                  std::to_string(n_prompt) + " prompt tokens plus max_tokens " +
                                  std::to_string(*request.max_tokens) + " need " +
                                  std::to_string(n_prompt + *request.max_tokens),
                              "max_tokens", "context_length_exceeded"));
    }
    max_tokens = *request.max_tokens;
  }
  for (int32_t i = 0; i < request.n; ++i) {
    engine::RequestOptions options;
    options.max_tokens = max_tokens;
    options.stop = request.stop;
    options.sampler = request.sampler;
    options.sampler.penalty_last_n = static_cast<int32_t>(model.n_ctx);
    options.sampler.seed = request.seeded ? request.sampler.seed + static_cast<uint64_t>(i) : random_seed();
    options.top_logprobs = request.logprobs ? request.top_logprobs : -1;
    plan.choices.push_back(std::move(options));
  }

  engine::Submission submission = model.scheduler->submit(plan.prompt, plan.choices);
  switch (submission.status) {
    case engine::SubmitStatus::Accepted:
      break;
    case engine::SubmitStatus::QueueFull:
      res.set_header("Retry-After", "1");
      return fail({.status = 429, .message = submission.message, .type = "rate_limit_error", .param = "",
                   .code = "rate_limit_exceeded"});
    case engine::SubmitStatus::TooLong:
      return fail(bad_request(submission.message, prompt_param, "context_length_exceeded"));
    case engine::SubmitStatus::ShuttingDown:
      return fail({.status = 503, .message = submission.message, .type = "server_error", .param = "", .code = ""});
  }

  current_access_record().prompt_tokens = static_cast<int64_t>(plan.prompt.size());
  const ResponseHeader header{.id = new_response_id(chat), .model = model.name,
                              .created = static_cast<int64_t>(std::time(nullptr))};
  const tokenizer::Tokenizer* tokenizer = model.tokenizer;
  engine::RequestHandle handle = submission.handle;
  auto shared_plan = std::make_shared<Plan>(std::move(plan));
  counters_.count(route, 200);
  res.status = 200;

  if (!shared_plan->request.stream) {
    // Whitespace before the JSON is still the same JSON; writing it is how a vanished client is noticed.
    res.set_chunked_content_provider("application/json", [=](size_t, httplib::DataSink& sink) {
      const CompletionRequest& r = shared_plan->request;
      std::vector<ChoiceState> choices(static_cast<size_t>(r.n));
      size_t done = 0;
      std::string error;
      while (done < choices.size() && error.empty()) {
        std::optional<engine::RequestEvent> event = handle->next(kHeartbeat);
        if (!event) {
          if (!write_all(sink, " ")) {
            handle->cancel();
            return false;
          }
          continue;
        }
        ChoiceState& c = choices[static_cast<size_t>(event->choice)];
        switch (event->kind) {
          case engine::RequestEvent::Kind::Text:
            c.text += event->text;
            c.logprobs.insert(c.logprobs.end(), event->logprobs.begin(), event->logprobs.end());
            break;
          case engine::RequestEvent::Kind::Done:
            c.finish_reason = finish_reason_name(event->reason);
            c.completion_tokens = event->completion_tokens;
            c.cached_tokens = event->cached_tokens;
            ++done;
            break;
          case engine::RequestEvent::Kind::Error:
            error = event->error;
            break;
        }
      }
      int64_t generated = 0;
      for (const ChoiceState& c : choices) generated += c.completion_tokens;
      current_access_record().completion_tokens = generated;
      if (shared_plan->split_reasoning) {
        for (ChoiceState& c : choices) {
          ReasoningDelta split = split_reasoning(c.text, shared_plan->prompt_opened_thinking);
          c.reasoning = std::move(split.reasoning);
          c.text = std::move(split.content);
        }
      }
      if (r.chat && r.tools) {
        for (ChoiceState& c : choices) {
          ParsedAnswer answer = parse_tool_calls(c.text, r.callable_tools);
          if (answer.tool_calls.empty()) continue;
          c.text = std::move(answer.content);
          c.tool_calls = std::move(answer.tool_calls);
          if (c.finish_reason == "stop") c.finish_reason = "tool_calls";
        }
      }
      if (!error.empty()) {
        handle->cancel();
        const ApiError e{.status = 500, .message = "generation failed: " + error, .type = "server_error", .param = "",
                         .code = ""};
        write_all(sink, dump(e.body()));
      } else {
        write_all(sink, dump(completion_json(header, r.chat, choices, r.logprobs, *tokenizer,
                                             static_cast<int32_t>(shared_plan->prompt.size()))));
      }
      sink.done();
      return true;
    });
    return;
  }

  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
    const CompletionRequest& r = shared_plan->request;
    const auto send = [&](const ordered_json& chunk) { return write_all(sink, "data: " + dump(chunk) + "\n\n"); };
    const auto gone = [&] {
      handle->cancel();
      return false;
    };
    std::vector<size_t> offsets(static_cast<size_t>(r.n), 0);
    // Thoughts go out as reasoning deltas; with tools, content from "<tool_call>" on is held
    // back and sent as tool calls at the end.
    const bool tools = r.chat && r.tools.has_value();
    std::vector<std::string> held(static_cast<size_t>(r.n));
    std::vector<ReasoningSplitter> splitters(static_cast<size_t>(r.n),
                                             ReasoningSplitter(shared_plan->prompt_opened_thinking));
    const auto split = [&](size_t choice, std::string text) {
      if (!shared_plan->split_reasoning) return ReasoningDelta{.reasoning = {}, .content = std::move(text)};
      return splitters[choice].feed(text);
    };
    const auto hold_tool_calls = [&](size_t choice, std::string text) {
      if (!tools) return text;
      std::string& h = held[choice];
      const bool calling = h.find("<tool_call>") != std::string::npos;
      h += text;
      const size_t safe = calling ? 0 : content_before_tool_call(h);
      text = h.substr(0, safe);
      h.erase(0, safe);
      return text;
    };
    if (r.chat) {
      for (int32_t i = 0; i < r.n; ++i) {
        if (!send(chunk_json(header, true, i, "", "", nullptr, "", true, r.include_usage, *tokenizer, 0))) return gone();
      }
    }
    int32_t completion_tokens = 0;
    int32_t cached_tokens = 0;
    size_t done = 0;
    while (done < static_cast<size_t>(r.n)) {
      std::optional<engine::RequestEvent> event = handle->next(kHeartbeat);
      if (!event) {
        if (!write_all(sink, ": keep-alive\n\n")) return gone();
        continue;
      }
      const size_t choice = static_cast<size_t>(event->choice);
      if (event->kind == engine::RequestEvent::Kind::Error) {
        handle->cancel();
        const ApiError e{.status = 500, .message = "generation failed: " + event->error, .type = "server_error",
                         .param = "", .code = ""};
        send(e.body());
        break;
      }
      if (event->kind == engine::RequestEvent::Kind::Text) {
        ReasoningDelta delta = split(choice, std::move(event->text));
        const std::string text = hold_tool_calls(choice, std::move(delta.content));
        const auto* lp = r.logprobs ? &event->logprobs : nullptr;
        if (text.empty() && delta.reasoning.empty() && (lp == nullptr || lp->empty())) continue;
        if (!send(chunk_json(header, r.chat, event->choice, text, delta.reasoning, lp, "", false, r.include_usage,
                             *tokenizer, offsets[choice]))) {
          return gone();
        }
        offsets[choice] += text.size();
        continue;
      }
      std::string finish = finish_reason_name(event->reason);
      if (shared_plan->split_reasoning) {
        ReasoningDelta rest = splitters[choice].finish();
        const std::string text = hold_tool_calls(choice, std::move(rest.content));
        if ((!text.empty() || !rest.reasoning.empty()) &&
            !send(chunk_json(header, true, event->choice, text, rest.reasoning, nullptr, "", false, r.include_usage,
                             *tokenizer, offsets[choice]))) {
          return gone();
        }
      }
      if (tools && !held[choice].empty()) {
        ParsedAnswer answer = parse_tool_calls(held[choice], r.callable_tools);
        if (!answer.content.empty() &&
            !send(chunk_json(header, true, event->choice, answer.content, "", nullptr, "", false, r.include_usage,
                             *tokenizer, offsets[choice]))) {
          return gone();
        }
        if (!answer.tool_calls.empty()) {
          if (!send(tool_calls_chunk_json(header, event->choice, answer.tool_calls, r.include_usage))) return gone();
          if (finish == "stop") finish = "tool_calls";
        }
      }
      completion_tokens += event->completion_tokens;
      if (event->choice == 0) cached_tokens = event->cached_tokens;
      const std::vector<engine::TokenLogprob> none;
      if (!send(chunk_json(header, r.chat, event->choice, "", "", r.logprobs ? &none : nullptr, finish, false,
                           r.include_usage, *tokenizer, offsets[choice]))) {
        return gone();
      }
      ++done;
    }
    current_access_record().completion_tokens = completion_tokens;
    if (r.include_usage) {
      send(usage_chunk_json(header, r.chat,
                            usage_json(static_cast<int32_t>(shared_plan->prompt.size()), completion_tokens, cached_tokens)));
    }
    write_all(sink, "data: [DONE]\n\n");
    sink.done();
    return true;
  });
}

}  // namespace gufo::server
