// Reading JSON that another program printed, without exceptions: a member that is missing or
// of another type reads as absent, never as 0 (gufo prints NaN as null, and a NaN read as 0
// would pass every limit).
#pragma once

#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gufo::qualify {

// j[key] when j is an object holding it, else null.
inline const nlohmann::json& member(const nlohmann::json& j, const char* key) {
  static const nlohmann::json kNull;
  if (!j.is_object()) return kNull;
  const auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

// j[k0][k1]... along `path`, null where any step is missing.
inline const nlohmann::json& member_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  for (const char* key : path) at = &member(*at, key);
  return *at;
}

// A finite number, or nothing.
inline std::optional<double> finite(const nlohmann::json& j) {
  if (!j.is_number()) return std::nullopt;
  const double v = j.get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

inline std::string string_of(const nlohmann::json& j, const std::string& fallback = "") {
  return j.is_string() ? j.get<std::string>() : fallback;
}

}  // namespace gufo::qualify
