// JSON as the server reads and writes it: optional members without exceptions, and text that
// is compact and never throws on invalid UTF-8 (a model can emit half a character; it becomes
// U+FFFD), so no answer fails at the last step.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gufo::server {

// object[key] when `object` is an object holding a non-null `key`; else null. For reading
// optional fields of request bodies without exceptions.
inline const nlohmann::ordered_json* json_member(const nlohmann::ordered_json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  const auto it = object->find(key);
  return it == object->end() || it->is_null() ? nullptr : &*it;
}
inline const nlohmann::ordered_json* json_member(const nlohmann::ordered_json& object, const char* key) {
  return json_member(&object, key);
}

inline std::string dump(const nlohmann::ordered_json& json) {
  return json.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace gufo::server
