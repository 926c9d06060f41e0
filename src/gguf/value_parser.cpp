// Metadata value parsing (see value_parser.h). Layouts: spec, gguf_metadata_value_t.
// Tested through tests/unit/gguf (malformed corpus, round trips) and the fuzzer.
#include "gguf/value_parser.h"

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "gguf/format.h"

namespace gufo::gguf {
namespace {

// NOTE(gguf): an element of an array of strings needs at least its 8-byte length; one of an
// array of arrays at least its element type (4) and length (8).
constexpr uint64_t kMinStringBytes = 8;
constexpr uint64_t kMinNestedArrayBytes = 4 + 8;

class ValueParser {
 public:
  ValueParser(ByteReader& reader, std::string_view quoted_key)
      : reader_(reader), quoted_key_(quoted_key), what_("value of key " + std::string(quoted_key)) {}

  Result<Value> value(ValueType type) {
    switch (type) {
      case ValueType::UInt8:
        return scalar<uint8_t>();
      case ValueType::Int8:
        return scalar<int8_t>();
      case ValueType::UInt16:
        return scalar<uint16_t>();
      case ValueType::Int16:
        return scalar<int16_t>();
      case ValueType::UInt32:
        return scalar<uint32_t>();
      case ValueType::Int32:
        return scalar<int32_t>();
      case ValueType::Float32:
        return scalar<float>();
      case ValueType::UInt64:
        return scalar<uint64_t>();
      case ValueType::Int64:
        return scalar<int64_t>();
      case ValueType::Float64:
        return scalar<double>();
      case ValueType::Bool: {
        GUFO_ASSIGN_OR_RETURN(bool flag, read_bool(0, /*in_array=*/false));
        return Value::boolean(flag);
      }
      case ValueType::String: {
        GUFO_ASSIGN_OR_RETURN(std::string_view text, reader_.read_string(what_value()));
        return Value::string(std::string(text));
      }
      case ValueType::Array: {
        GUFO_ASSIGN_OR_RETURN(Array inner, array(/*depth=*/0));
        return Value::array(std::move(inner));
      }
    }
    return reader_.error(key_prefix() + "unknown value type");  // unreachable: type is valid
  }

 private:
  Result<bool> read_bool(uint64_t element_index, bool in_array) {
    const uint64_t at = reader_.offset();
    GUFO_ASSIGN_OR_RETURN(uint8_t byte, reader_.read<uint8_t>(what_value()));
    if (byte > 1) {
      // NOTE(gguf): the spec: "1-byte value where 0 is false and 1 is true. Anything else is
      // invalid".
      std::string where = in_array ? "bool element " + std::to_string(element_index) : std::string("bool value");
      return reader_.error(key_prefix() + where + " is " + std::to_string(byte) + " at offset " + std::to_string(at) +
                           " (must be 0 or 1)");
    }
    return byte == 1;
  }

  template <class T>
  Result<Value> scalar() {
    GUFO_ASSIGN_OR_RETURN(T value, reader_.read<T>(what_value()));
    return Value::of<T>(value);
  }

  template <class T>
  Result<Array> fixed_array(uint64_t count) {
    std::vector<T> values(count);  // count * sizeof(T) <= bytes left, checked by the caller
    GUFO_ASSIGN_OR_RETURN(std::string_view raw, reader_.read_bytes(count * sizeof(T), what_value()));
    if (count != 0) std::memcpy(values.data(), raw.data(), raw.size());
    return Array(std::move(values));
  }

  Result<Array> bool_array(uint64_t count) {
    std::vector<bool> values(count);
    for (uint64_t i = 0; i < count; ++i) {
      GUFO_ASSIGN_OR_RETURN(bool value, read_bool(i, /*in_array=*/true));
      values[i] = value;
    }
    return Array(std::move(values));
  }

  Result<Array> string_array(uint64_t count) {
    std::vector<std::string> values;
    values.reserve(count);  // count * 8 <= bytes left, checked by the caller
    for (uint64_t i = 0; i < count; ++i) {
      GUFO_ASSIGN_OR_RETURN(std::string_view text, reader_.read_string(what_value()));
      values.emplace_back(text);
    }
    return Array(std::move(values));
  }

  Result<Array> array(int depth) {
    const uint64_t at = reader_.offset();
    GUFO_ASSIGN_OR_RETURN(uint32_t type_id, reader_.read<uint32_t>(what_value()));
    GUFO_ASSIGN_OR_RETURN(uint64_t count, reader_.read<uint64_t>(what_value()));
    const auto type = value_type_from_id(type_id);
    if (!type) {
      return reader_.error(key_prefix() + "unknown array element type " + std::to_string(type_id) + " at offset " +
                           std::to_string(at));
    }
    if (*type == ValueType::Array && depth + 1 >= kMaxArrayDepth) {
      return reader_.error(key_prefix() + "arrays nested more than " + std::to_string(kMaxArrayDepth) +
                           " levels deep at offset " + std::to_string(at));
    }
    uint64_t min_element_bytes = value_type_fixed_bytes(*type);
    if (*type == ValueType::String) min_element_bytes = kMinStringBytes;
    if (*type == ValueType::Array) min_element_bytes = kMinNestedArrayBytes;
    // Division, not multiplication: count comes from the file and may be near 2^64.
    if (count > reader_.remaining() / min_element_bytes) {
      return reader_.error(key_prefix() + "array of " + std::to_string(count) + " " +
                           std::string(value_type_name(*type)) + " at offset " + std::to_string(at) +
                           " runs past the end of the file (needs at least " + std::to_string(min_element_bytes) +
                           " bytes per element, " + std::to_string(reader_.remaining()) + " bytes left)");
    }
    switch (*type) {
      case ValueType::UInt8:
        return fixed_array<uint8_t>(count);
      case ValueType::Int8:
        return fixed_array<int8_t>(count);
      case ValueType::UInt16:
        return fixed_array<uint16_t>(count);
      case ValueType::Int16:
        return fixed_array<int16_t>(count);
      case ValueType::UInt32:
        return fixed_array<uint32_t>(count);
      case ValueType::Int32:
        return fixed_array<int32_t>(count);
      case ValueType::Float32:
        return fixed_array<float>(count);
      case ValueType::Bool:
        return bool_array(count);
      case ValueType::String:
        return string_array(count);
      case ValueType::UInt64:
        return fixed_array<uint64_t>(count);
      case ValueType::Int64:
        return fixed_array<int64_t>(count);
      case ValueType::Float64:
        return fixed_array<double>(count);
      case ValueType::Array:
        break;
    }
    std::vector<Array> values;
    values.reserve(count);  // count * 12 <= bytes left, checked above
    for (uint64_t i = 0; i < count; ++i) {
      GUFO_ASSIGN_OR_RETURN(Array inner, array(depth + 1));
      values.push_back(std::move(inner));
    }
    return Array(std::move(values));
  }

  std::string key_prefix() const { return "key " + std::string(quoted_key_) + ": "; }
  const std::string& what_value() const { return what_; }

  ByteReader& reader_;
  std::string_view quoted_key_;
  const std::string what_;  // built once: a vocabulary reads it for each of its strings
};

}  // namespace

Result<Value> parse_value(ByteReader& reader, ValueType type, std::string_view quoted_key) {
  ValueParser parser{reader, quoted_key};
  return parser.value(type);
}

}  // namespace gufo::gguf
