// `gufo serve`'s HTTP side (cpp-httplib): the OpenAI routes (POST /v1/chat/completions,
// POST /v1/completions, POST /v1/responses, POST /v1/embeddings, GET /v1/models, GET /v1/models/{id}), Anthropic's
// Messages API (POST /v1/messages, POST /v1/messages/count_tokens), llama.cpp's slot API (GET /slots,
// POST /slots/{id}?action=save|restore|erase: server/slots.h), GET /health (the process answers), GET /ready (the
// model is loaded and the engine takes requests), GET /metrics (Prometheus) and GET / (the chat page,
// server/chat_page.h; also /index.html). Requests are
// checked (server/openai_request.h), rendered with the model's chat template, and handed to
// the engine (engine/scheduler.h); answers are whole JSON objects or server-sent events.
// A client that goes away mid-answer cancels its generation (writes fail; while nothing
// else is written, a keep-alive comment or whitespace every second finds out).
// Tested by tests/functional (OpenAI's and Anthropic's clients against the real binary); the
// pieces by tests/unit/server.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "core/result.h"
#include "engine/chat_prompt.h"
#include "engine/scheduler.h"
#include "server/generation.h"
#include "server/metrics.h"
#include "server/model_registry.h"
#include "server/response_store.h"
#include "tokenizer/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace gufo::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;      // 0: any free port
  std::string api_key;  // non-empty: /v1 routes need "Authorization: Bearer <key>"
  size_t max_body_bytes = size_t{8} << 20;
  int http_threads = 64;                        // connections served at once (streams hold one each)
  bool separate_reasoning = true;               // chat: <think> blocks go to reasoning_content (server/reasoning.h)
  bool access_log = true;                       // a line per request on stderr (server/access_log.h)
  std::chrono::milliseconds injected_delay{0};  // GUFO_FAULTS request_delay_ms (core/faults.h)
  std::string slot_save_path;                   // where /slots/{id} saves and restores ("": no slot actions)
};

class HttpServer {
 public:
  explicit HttpServer(ServerOptions options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds the listening socket, exclusively (a port another server holds is an error);
  // returns the port (useful with port 0).
  Result<int> bind();
  // Serves until stop(); call after bind(), on a thread of its own. Returns at once when
  // stop() came first.
  void serve();
  // From now on /ready says yes and the /v1 routes answer (until then: 503). The registry
  // outlives the server's serving.
  void set_models(ModelRegistry& models);
  // New completion requests get 503 from now on; running ones go on.
  void stop_accepting() { stopping_.store(true); }
  // Ends the listening loop after the in-flight answers end (shut the engine down first,
  // so that they do). Safe at any time, also before serve() started or while it starts.
  void stop();

 private:
  enum class ErrorShape { OpenAI, Anthropic };
  static ErrorShape shape_of(const httplib::Request& req);  // by route: Anthropic's under /v1/messages
  void routes();
  // The parts of routes(): /, /health, /ready and /metrics; /v1/models; the API's error bodies
  // for what httplib answers itself and for exceptions; the in-flight count and access log.
  void page_and_status_routes();
  void model_routes();
  void error_handlers();
  void access_log_handlers();

  // The generation routes, one file per API: openai_routes.cpp, anthropic_routes.cpp,
  // responses_routes.cpp.
  void completion(const httplib::Request& req, httplib::Response& res, bool chat);
  void anthropic_messages(const httplib::Request& req, httplib::Response& res, bool count_only);
  void responses(const httplib::Request& req, httplib::Response& res);   // responses_routes.cpp
  void embeddings(const httplib::Request& req, httplib::Response& res);  // embeddings_routes.cpp
  // The slot API (server/slots.h; slot_routes.cpp); slot_model: the model a slot route names
  // (?model=), or null once the error is replied (the caller checked the API key).
  void slot_routes();
  void slot_action(const httplib::Request& req, httplib::Response& res);
  std::shared_ptr<const LoadedModel> slot_model(const httplib::Request& req, httplib::Response& res,
                                                const std::string& route);

  // The first steps of every generation route: the API key, a 503 while loading or
  // stopping, the body as JSON and the model it names. On failure the error has been
  // replied and the result is empty.
  struct GenerationBody {
    nlohmann::ordered_json json;
    std::shared_ptr<const LoadedModel> holder;  // keeps the model loaded while the request runs
    const ServedModel* model = nullptr;         // holder's
  };
  std::optional<GenerationBody> read_generation_body(const httplib::Request& req, httplib::Response& res,
                                                     const std::string& route, ErrorShape shape, bool model_required);

  ApiError model_not_found(const std::string& name) const;
  // 503 while loading or shutting down, else nothing.
  std::optional<ApiError> refuse_generation() const;
  // With --api-key: 'Authorization: Bearer KEY' or Anthropic's 'x-api-key: KEY'; else a 401.
  bool authorized(const httplib::Request& req, httplib::Response& res, const std::string& route,
                  ErrorShape shape = ErrorShape::OpenAI);
  void reply_error(httplib::Response& res, const std::string& route, const ApiError& error,
                   ErrorShape shape = ErrorShape::OpenAI);
  // Why a loaded model's device was lost ("" while every device works).
  std::string lost_device() const;
  void reply(httplib::Response& res, const std::string& route, int status, const std::string& body,
             const char* content_type = "application/json");

  ServerOptions options_;
  std::unique_ptr<httplib::Server> http_;
  ModelRegistry* models_ = nullptr;
  std::atomic<bool> ready_{false};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> serving_{false};  // serve() was entered (see stop())
  std::atomic<bool> served_{false};   // serve() returned
  std::atomic<bool> stop_sent_{false};
  std::atomic<int> in_flight_{0};  // requests routed and not yet answered to the last byte
  int port_ = 0;
  HttpCounters counters_;
  ResponseStore responses_;  // previous_response_id
};

}  // namespace gufo::server
