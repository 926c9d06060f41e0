// GGUF metadata values: the 13 value types of the spec (gguf_metadata_value_type), scalars,
// strings and typed arrays, arrays of arrays included. Shared by the reader and the writer.
// Tested by tests/unit/gguf/value_test.cpp and the round trips in writer_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace gufo::gguf {

// NOTE(gguf): the numeric values are the on-disk ids (spec, gguf_metadata_value_type). The
// variants below list their alternatives in this order, so variant::index() == the id.
enum class ValueType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

// The type for an on-disk id, or nullopt for ids the spec does not define.
std::optional<ValueType> value_type_from_id(uint32_t id);
// The spec's names: "uint8", "int8", ..., "float64".
std::string_view value_type_name(ValueType type);
// Encoded size of one value of a fixed-size type; 0 for String and Array.
uint64_t value_type_fixed_bytes(ValueType type);

class Array;

// A typed array. Every element has the one element type (spec: the type precedes the
// elements); arrays of arrays hold Arrays whose element types may differ from each other.
class Array {
 public:
  using Elements = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>, std::vector<int16_t>,
                                std::vector<uint32_t>, std::vector<int32_t>, std::vector<float>, std::vector<bool>,
                                std::vector<std::string>, std::vector<Array>, std::vector<uint64_t>,
                                std::vector<int64_t>, std::vector<double>>;

  Array() = default;  // an empty array of uint8
  template <class T>
  explicit Array(std::vector<T> values) : elements_(std::move(values)) {}
  explicit Array(Elements elements) : elements_(std::move(elements)) {}

  ValueType element_type() const { return static_cast<ValueType>(elements_.index()); }
  uint64_t size() const;
  const Elements& elements() const { return elements_; }

  // The elements as std::vector<T>, or nullptr when the element type is not T.
  template <class T>
  const std::vector<T>* get_if() const {
    return std::get_if<std::vector<T>>(&elements_);
  }

  bool operator==(const Array& other) const;

 private:
  Elements elements_;
};

// One metadata value of any type.
class Value {
 public:
  using Data = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool, std::string, Array,
                            uint64_t, int64_t, double>;

  Value() = default;  // uint8 0
  explicit Value(Data data) : data_(std::move(data)) {}

  // NOTE(gguf): named factories, because C++ overload rules would pick the variant
  // alternative for a literal (1 -> int32? bool? uint8?) rather than the type the file needs.
  template <class T>
  static Value of(T value) {
    return Value(Data(std::in_place_type<T>, std::move(value)));
  }
  static Value u8(uint8_t v) { return of(v); }
  static Value i8(int8_t v) { return of(v); }
  static Value u16(uint16_t v) { return of(v); }
  static Value i16(int16_t v) { return of(v); }
  static Value u32(uint32_t v) { return of(v); }
  static Value i32(int32_t v) { return of(v); }
  static Value f32(float v) { return of(v); }
  static Value boolean(bool v) { return of(v); }
  static Value string(std::string v) { return of(std::move(v)); }
  static Value array(Array v) { return of(std::move(v)); }
  static Value u64(uint64_t v) { return of(v); }
  static Value i64(int64_t v) { return of(v); }
  static Value f64(double v) { return of(v); }

  ValueType type() const { return static_cast<ValueType>(data_.index()); }
  const Data& data() const { return data_; }

  // The value as T, or nullptr when its type is not T.
  template <class T>
  const T* get_if() const {
    return std::get_if<T>(&data_);
  }

  // "uint32", "string", or "array of string", "array of array": for messages.
  std::string type_description() const;

  // Bitwise for floats (NaN == NaN with the same bits), so round trips compare exactly.
  bool operator==(const Value& other) const;

 private:
  Data data_;
};

// The ValueType of a C++ type (the variant alternative it is stored as).
template <class T>
constexpr ValueType value_type_of() {
  using Data = Value::Data;
  constexpr size_t kIndex = []<size_t... I>(std::index_sequence<I...>) {
    size_t index = 0;
    ((std::is_same_v<T, std::variant_alternative_t<I, Data>> ? (index = I) : 0), ...);
    return index;
  }(std::make_index_sequence<std::variant_size_v<Data>>{});
  static_assert(std::is_same_v<T, std::variant_alternative_t<kIndex, Data>>, "not a GGUF value type");
  return static_cast<ValueType>(kIndex);
}

}  // namespace gufo::gguf
