// HttpServer (see http_server.h).
#include "server/http_server.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "server/access_log.h"
#include "server/anthropic_response.h"
#include "server/chat_page.h"
#include "server/json_text.h"
#include "server/listen_socket.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

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
  static constexpr std::string_view kRoutes[] = {"/",
                                                 "/health",
                                                 "/ready",
                                                 "/metrics",
                                                 "/v1/models",
                                                 "/v1/chat/completions",
                                                 "/v1/completions",
                                                 "/v1/messages",
                                                 "/v1/messages/count_tokens",
                                                 "/v1/responses",
                                                 "/v1/embeddings"};
  for (const std::string_view route : kRoutes) {
    if (req.path == route) return std::string(route);
  }
  if (req.path.starts_with("/v1/models/")) return "/v1/models/{id}";
  if (req.path == "/index.html") return "/";
  return "other";
}

// NOTE(csp): the chat page may run only its own script and style (by hash, so that no text
// that ends up in the page can run or restyle it), talk only to this server, load nothing
// else (its icon is a data: URL) and not be framed by another site.
std::string chat_page_policy() {
  const ChatPage& page = chat_page();
  return "default-src 'none'; script-src 'sha256-" + std::string(page.script_sha256) + "'; " + "style-src 'sha256-" +
         std::string(page.style_sha256) + "'; connect-src 'self'; img-src data:; " +
         "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
}

}  // namespace

HttpServer::HttpServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
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

void HttpServer::set_models(ModelRegistry& models) {
  models_ = &models;
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
  // Idle kept-alive connections end now; the answers still being written finish (the engine
  // is shut down, so they end soon), unless a client stopped reading: after 5 s the writes
  // are cut too, rather than waiting out the 30 s write timeout.
  shut_connections(port_, /*writes_too=*/false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (in_flight_.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (in_flight_.load() > 0) shut_connections(port_, /*writes_too=*/true);
}

std::string HttpServer::lost_device() const {
  if (!ready_.load(std::memory_order_acquire)) return "";
  for (const auto& model : models_->loaded_models()) {
    std::string lost = model->served().scheduler->device_failure();
    if (!lost.empty()) return lost;
  }
  return "";
}

void HttpServer::reply(httplib::Response& res, const std::string& route, int status, const std::string& body,
                       const char* content_type) {
  res.status = status;
  res.set_content(body, content_type);
  counters_.count(route, status);
}

bool HttpServer::authorized(const httplib::Request& req, httplib::Response& res, const std::string& route,
                            ErrorShape shape) {
  if (options_.api_key.empty()) return true;
  const std::string header = req.get_header_value("Authorization");
  const std::string x_api_key = req.get_header_value("x-api-key");
  const std::optional<std::string_view> key = x_api_key.empty() ? bearer_token(header) : x_api_key;
  if (key && constant_time_equal(*key, options_.api_key)) return true;
  const ApiError error{.status = 401,
                       .message = header.empty() && x_api_key.empty()
                                      ? "no API key given (send 'Authorization: Bearer <key>' or 'x-api-key: <key>')"
                                  : key ? "incorrect API key"
                                        : "the Authorization header is not 'Bearer <key>'",
                       .type = "invalid_request_error",
                       .param = "",
                       .code = "invalid_api_key"};
  res.set_header("WWW-Authenticate", "Bearer");
  reply_error(res, route, error, shape);
  return false;
}

std::optional<HttpServer::GenerationBody> HttpServer::read_generation_body(const httplib::Request& req,
                                                                           httplib::Response& res,
                                                                           const std::string& route, ErrorShape shape,
                                                                           bool model_required) {
  if (!authorized(req, res, route, shape)) return std::nullopt;
  const auto fail = [&](const ApiError& error) {
    reply_error(res, route, error, shape);
    return std::nullopt;
  };
  if (std::optional<ApiError> closed = refuse_generation()) return fail(*closed);
  GenerationBody body;
  try {
    body.json = nlohmann::ordered_json::parse(req.body);
  } catch (const nlohmann::ordered_json::parse_error& e) {
    return fail(bad_request(std::string("the body is not valid JSON: ") + e.what(), "", "invalid_json"));
  }
  const auto named = body.json.is_object() ? body.json.find("model") : body.json.end();
  const bool has_name = named != body.json.end() && named->is_string();
  if (model_required && !has_name) {
    return fail(
        bad_request("'model' is required (an id that GET /v1/models lists)", "model", "missing_required_parameter"));
  }
  const std::string name = has_name ? named->get<std::string>() : "";
  if (!models_->offers(name)) return fail(model_not_found(name));
  Result<std::shared_ptr<const LoadedModel>> model = models_->acquire(name);
  if (!model.ok()) {
    return fail(ApiError{.status = 500,
                         .message = model.error().message,
                         .type = "server_error",
                         .param = "model",
                         .code = "model_load_failed"});
  }
  body.holder = std::move(model).value();
  body.model = &body.holder->served();
  return body;
}

HttpServer::ErrorShape HttpServer::shape_of(const httplib::Request& req) {
  return req.path == "/v1/messages" || req.path.starts_with("/v1/messages/") ? ErrorShape::Anthropic
                                                                             : ErrorShape::OpenAI;
}

ApiError HttpServer::model_not_found(const std::string& name) const {
  std::string names;
  for (const ModelRegistry::Status& model : models_->list()) names += (names.empty() ? "'" : ", '") + model.name + "'";
  return ApiError{.status = 404,
                  .message = "the model '" + name + "' does not exist; this server has " + names,
                  .type = "invalid_request_error",
                  .param = "model",
                  .code = "model_not_found"};
}

std::optional<ApiError> HttpServer::refuse_generation() const {
  if (stopping_.load()) {
    return ApiError{
        .status = 503, .message = "the server is shutting down", .type = "server_error", .param = "", .code = ""};
  }
  if (!ready_.load(std::memory_order_acquire)) {
    return ApiError{.status = 503,
                    .message = "the model is still loading",
                    .type = "server_error",
                    .param = "",
                    .code = "",
                    .retry_after_seconds = 1};
  }
  return std::nullopt;
}

void HttpServer::reply_error(httplib::Response& res, const std::string& route, const ApiError& error,
                             ErrorShape shape) {
  if (error.retry_after_seconds > 0) res.set_header("Retry-After", std::to_string(error.retry_after_seconds));
  reply(res, route, error.status, dump(shape == ErrorShape::Anthropic ? anthropic_error_body(error) : error.body()));
}

void HttpServer::routes() {
  page_and_status_routes();
  model_routes();
  slot_routes();
  http_->Post("/v1/chat/completions",
              [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, true); });
  http_->Post("/v1/completions",
              [this](const httplib::Request& req, httplib::Response& res) { completion(req, res, false); });
  http_->Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) { responses(req, res); });
  http_->Post("/v1/embeddings", [this](const httplib::Request& req, httplib::Response& res) { embeddings(req, res); });
  http_->Post("/v1/messages",
              [this](const httplib::Request& req, httplib::Response& res) { anthropic_messages(req, res, false); });
  http_->Post("/v1/messages/count_tokens",
              [this](const httplib::Request& req, httplib::Response& res) { anthropic_messages(req, res, true); });
  error_handlers();
  access_log_handlers();
}

void HttpServer::page_and_status_routes() {
  // The chat page: static, so it needs no API key (the API requests it makes carry one).
  const auto chat_page_route = [this, policy = chat_page_policy()](const httplib::Request&, httplib::Response& res) {
    res.set_header("Content-Security-Policy", policy);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Content-Type-Options", "nosniff");
    reply(res, "/", 200, std::string(chat_page().html), "text/html; charset=utf-8");
  };
  http_->Get("/", chat_page_route);
  http_->Get(R"(/index\.html)", chat_page_route);
  http_->Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    // A model whose device was lost can serve nothing more: the process is unhealthy, so
    // that whatever supervises it restarts it.
    if (const std::string lost = lost_device(); !lost.empty()) {
      reply(res, "/health", 503, nlohmann::json{{"status", "error"}, {"error", lost}}.dump());
      return;
    }
    reply(res, "/health", 200, R"({"status":"ok"})");
  });
  http_->Get("/ready", [this](const httplib::Request&, httplib::Response& res) {
    if (const std::string lost = lost_device(); !lost.empty()) {
      reply(res, "/ready", 503, nlohmann::json{{"status", "error"}, {"error", lost}}.dump());
      return;
    }
    const bool ready = ready_.load(std::memory_order_acquire) && !stopping_.load();
    const char* status = ready              ? R"({"status":"ready"})"
                         : stopping_.load() ? R"({"status":"stopping"})"
                                            : R"({"status":"loading"})";
    reply(res, "/ready", ready ? 200 : 503, status);
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    // Every loaded model's engine, one labelled series each (metrics.h).
    std::vector<ModelStats> stats;
    if (ready_.load(std::memory_order_acquire)) {
      for (const auto& model : models_->loaded_models()) {
        stats.push_back({.model = model->served().name, .stats = model->served().scheduler->stats()});
      }
    }
    counters_.count("/metrics", 200);
    res.status = 200;
    res.set_content(render_metrics(stats, counters_.snapshot()), "text/plain; version=0.0.4");
  });
}

void HttpServer::model_routes() {
  // A model's context is known once it is loaded.
  const auto model_json = [](const ModelRegistry::Status& m) {
    ordered_json json{{"id", m.name}, {"object", "model"}, {"created", 0}, {"owned_by", "gufo"}, {"loaded", m.loaded}};
    if (m.loaded) json["max_model_len"] = m.n_ctx;
    return json;
  };
  http_->Get("/v1/models", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    if (!authorized(req, res, "/v1/models")) return;
    ordered_json data = ordered_json::array();
    if (ready_.load(std::memory_order_acquire)) {
      for (const ModelRegistry::Status& m : models_->list()) data.push_back(model_json(m));
    }
    reply(res, "/v1/models", 200, dump({{"object", "list"}, {"data", data}}));
  });
  http_->Get(R"(/v1/models/(.+))", [this, model_json](const httplib::Request& req, httplib::Response& res) {
    const std::string route = "/v1/models/{id}";
    if (!authorized(req, res, route)) return;
    if (!ready_.load(std::memory_order_acquire)) return reply_error(res, route, *refuse_generation());
    const std::string id = req.matches[1].str();
    for (const ModelRegistry::Status& m : models_->list()) {
      if (m.name == id) return reply(res, route, 200, dump(model_json(m)));
    }
    reply_error(res, route, model_not_found(id));
  });
}

void HttpServer::error_handlers() {
  // httplib answers some errors itself (404, 413 body too large, 400 bad request line):
  // give them the API's error body too (Anthropic's under /v1/messages, else OpenAI's).
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
    res.set_content(dump(shape_of(req) == ErrorShape::Anthropic ? anthropic_error_body(error) : error.body()),
                    "application/json");
  });
  http_->set_exception_handler(
      [this](const httplib::Request& req, httplib::Response& res, const std::exception_ptr& ep) {
        std::string what = "internal error";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        const ApiError error{.status = 500, .message = what, .type = "server_error", .param = "", .code = ""};
        reply_error(res, route_label(req), error, shape_of(req));
      });
}

void HttpServer::access_log_handlers() {
  // The logger runs after an answer's last byte, for every request (routed or not).
  http_->set_pre_routing_handler([this](const httplib::Request&, httplib::Response&) {
    current_access_record() = AccessRecord{.start = std::chrono::steady_clock::now(), .routed = true};
    in_flight_.fetch_add(1);
    if (options_.injected_delay.count() > 0) std::this_thread::sleep_for(options_.injected_delay);
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

}  // namespace gufo::server
