// GGUF value types: names, sizes, and exact (bitwise for floats) equality.
// Tested by tests/unit/gguf/value_test.cpp.
#include "gguf/value.h"

#include <array>
#include <cstring>
#include <type_traits>

namespace gufo::gguf {
namespace {

// NOTE(gguf): names and sizes in on-disk id order (spec, gguf_metadata_value_type).
constexpr std::array<std::string_view, kValueTypeCount> kNames = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                                                  "int32",  "float32", "bool",   "string", "array",
                                                                  "uint64", "int64",   "float64"};
constexpr std::array<uint64_t, kValueTypeCount> kFixedBytes = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

template <class T>
bool same_bits(const T& a, const T& b) {
  if constexpr (std::is_floating_point_v<T>) {
    // Bit equality on purpose: a NaN equals itself and -0.0 differs from 0.0.
    return std::memcmp(&a, &b, sizeof(T)) == 0;  // NOLINT(bugprone-suspicious-memory-comparison)
  } else {
    return a == b;
  }
}

template <class T>
bool same_elements(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_bits<T>(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

std::optional<ValueType> value_type_from_id(uint32_t id) {
  if (id >= kValueTypeCount) return std::nullopt;
  return static_cast<ValueType>(id);
}

std::string_view value_type_name(ValueType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kValueTypeCount ? kNames[id] : std::string_view("unknown");
}

uint64_t value_type_fixed_bytes(ValueType type) {
  const auto id = static_cast<uint32_t>(type);
  return id < kValueTypeCount ? kFixedBytes[id] : 0;
}

uint64_t Array::size() const {
  return std::visit([](const auto& values) -> uint64_t { return values.size(); }, elements_);
}

bool Array::operator==(const Array& other) const {
  if (elements_.index() != other.elements_.index()) return false;
  return std::visit(
      [&](const auto& mine) {
        using Vec = std::decay_t<decltype(mine)>;
        return same_elements(mine, std::get<Vec>(other.elements_));
      },
      elements_);
}

std::string Value::type_description() const {
  std::string text(value_type_name(type()));
  if (const Array* array = get_if<Array>()) {
    text += " of ";
    text += value_type_name(array->element_type());
  }
  return text;
}

bool Value::operator==(const Value& other) const {
  if (data_.index() != other.data_.index()) return false;
  return std::visit(
      [&](const auto& mine) {
        using T = std::decay_t<decltype(mine)>;
        return same_bits<T>(mine, std::get<T>(other.data_));
      },
      data_);
}

}  // namespace gufo::gguf
