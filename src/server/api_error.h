// An error as the OpenAI API reports it: HTTP status plus the body
// {"error": {"message", "type", "param", "code"}}, which OpenAI's clients turn into typed
// exceptions (BadRequestError, AuthenticationError, RateLimitError, ...).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gufo::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;            // the request field at fault, if any
  std::string code;             // a machine-readable reason, if any
  int retry_after_seconds = 0;  // > 0: sent as Retry-After (429, 503)

  nlohmann::ordered_json body() const {
    nlohmann::ordered_json error{{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
    if (!param.empty()) error["param"] = param;
    if (!code.empty()) error["code"] = code;
    return {{"error", error}};
  }
};

inline ApiError bad_request(std::string message, std::string param = "", std::string code = "") {
  return ApiError{.status = 400,
                  .message = std::move(message),
                  .type = "invalid_request_error",
                  .param = std::move(param),
                  .code = std::move(code)};
}

}  // namespace gufo::server
