// JSON as the server writes it: compact, and never throwing on text that is not valid UTF-8
// (a model can emit half a character; it becomes U+FFFD), so no answer fails at the last step.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gufo::server {

inline std::string dump(const nlohmann::ordered_json& json) {
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gufo::server
