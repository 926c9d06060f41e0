// parse_kv_override (see kv_override.h).
#include "quantize/kv_override.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>

namespace gufo::quantize {

Result<KvOverride> parse_kv_override(std::string_view text) {
  const auto fail = [&](const std::string& why) {
    return Error{"--override-kv '" + std::string(text) + "': " + why +
                 " (expected KEY=TYPE:VALUE, TYPE int, float, bool or str)"};
  };
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0) return fail("no KEY=");
  const std::string_view key = text.substr(0, eq);
  const std::string_view typed = text.substr(eq + 1);
  const size_t colon = typed.find(':');
  if (colon == std::string_view::npos) return fail("no TYPE:");
  const std::string_view type = typed.substr(0, colon);
  const std::string_view value = typed.substr(colon + 1);
  KvOverride out{.key = std::string(key), .value = gguf::Value::boolean(false)};
  if (type == "str") {
    out.value = gguf::Value::string(std::string(value));
  } else if (type == "bool") {
    if (value != "true" && value != "false") return fail("a bool is true or false");
    out.value = gguf::Value::boolean(value == "true");
  } else if (type == "int") {
    uint32_t n = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size()) return fail("an int is a whole number 0..4294967295");
    out.value = gguf::Value::u32(n);
  } else if (type == "float") {
    float f = 0.0f;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), f);
    if (ec != std::errc() || end != value.data() + value.size() || !std::isfinite(f)) return fail("not a finite float");
    out.value = gguf::Value::f32(f);
  } else {
    return fail("unknown TYPE '" + std::string(type) + "'");
  }
  return out;
}

}  // namespace gufo::quantize
