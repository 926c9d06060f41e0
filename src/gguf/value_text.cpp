// Abbreviated one-line text for metadata values (see value_text.h).
// Tested by tests/unit/gguf/value_text_test.cpp.
#include "gguf/value_text.h"

#include <charconv>
#include <cmath>
#include <type_traits>

#include "gguf/text.h"

namespace gufo::gguf {
namespace {

struct Printer {
  const TextLimits& limits;
  size_t items_left;

  void element(std::string& out, const auto& item) {
    using T = std::decay_t<decltype(item)>;
    if constexpr (std::is_same_v<T, std::string>) {
      out += quote_string(item, limits.max_item_string_bytes);
      if (item.size() > limits.max_item_string_bytes) out += "...";
    } else if constexpr (std::is_same_v<T, Array>) {
      array(out, item);
    } else {
      scalar(out, item);
    }
  }

  void scalar(std::string& out, auto value) {
    using T = decltype(value);
    if constexpr (std::is_same_v<T, bool>) {
      out += value ? "true" : "false";
    } else if constexpr (std::is_floating_point_v<T>) {
      out += float_to_text(value, std::is_same_v<T, float>);
    } else {
      out += std::to_string(value);
    }
  }

  void array(std::string& out, const Array& array) {
    out += "[" + std::to_string(array.size()) + " x " + std::string(value_type_name(array.element_type())) + "] [";
    std::visit(
        [&](const auto& elements) {
          size_t shown = 0;
          for (const auto& item : elements) {
            if (shown == limits.max_array_items || items_left == 0) {
              out += shown == 0 ? "..." : ", ...";
              break;
            }
            if (shown != 0) out += ", ";
            --items_left;
            ++shown;
            using T = typename std::decay_t<decltype(elements)>::value_type;
            element(out, static_cast<const T&>(item));
          }
        },
        array.elements());
    out += "]";
  }
};

}  // namespace

std::string float_to_text(double value, bool single_precision) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  const auto result = single_precision ? std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(value))
                                       : std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string value_to_text(const Value& value, const TextLimits& limits) {
  if (const std::string* text = value.get_if<std::string>()) {
    bool truncated = false;
    std::string out = quote_string(*text, limits.max_string_bytes, &truncated);
    if (truncated) out += " ... (truncated, " + std::to_string(text->size()) + " bytes)";
    return out;
  }
  Printer printer{limits, limits.max_total_items};
  std::string out;
  std::visit([&](const auto& typed) { printer.element(out, typed); }, value.data());
  return out;
}

std::string array_to_text(const Array& array, const TextLimits& limits) {
  Printer printer{limits, limits.max_total_items};
  std::string out;
  printer.array(out, array);
  return out;
}

}  // namespace gufo::gguf
