// Value: construction, truthiness, equality, printing and Python-style JSON of template values.
// Tested through tests/unit/template/template_test.cpp (tojson, printing, comparisons).
#include "template/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "template/callable.h"

namespace gufo::tmpl {

// NOTE(template): most dicts (messages, loop) are small; a linear scan beats hashing there, and
// the hash index is only built once a dict grows past kIndexFrom entries.
constexpr size_t kIndexFrom = 16;

const Value* ObjectData::find(const std::string& key) const {
  if (entries_.size() < kIndexFrom) {
    for (const auto& entry : entries_) {
      if (entry.first == key) return &entry.second;
    }
    return nullptr;
  }
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void ObjectData::set(const std::string& key, Value value) {
  if (const Value* found = find(key)) {
    depth_ = std::max(depth_, 1 + value.depth());
    *const_cast<Value*>(found) = std::move(value);
    return;
  }
  depth_ = std::max(depth_, 1 + value.depth());
  entries_.emplace_back(key, std::move(value));
  if (entries_.size() == kIndexFrom) {
    for (size_t i = 0; i < entries_.size(); ++i) index_.emplace(entries_[i].first, i);
  } else if (entries_.size() > kIndexFrom) {
    index_.emplace(key, entries_.size() - 1);
  }
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}
Value Value::boolean(bool b) {
  Value v;
  v.kind_ = Kind::Bool;
  v.bool_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v;
  v.kind_ = Kind::Int;
  v.int_ = i;
  return v;
}
Value Value::floating(double d) {
  Value v;
  v.kind_ = Kind::Float;
  v.float_ = d;
  return v;
}
Value Value::string(std::string s) {
  Value v;
  v.kind_ = Kind::String;
  v.string_ = std::make_shared<const std::string>(std::move(s));
  return v;
}
Value Value::array(std::vector<Value> items) {
  Value v;
  v.kind_ = Kind::Array;
  v.array_depth_ = 1;
  for (const Value& item : items) v.array_depth_ = std::max(v.array_depth_, 1 + item.depth());
  v.array_ = std::make_shared<std::vector<Value>>(std::move(items));
  return v;
}
Value Value::object() {
  Value v;
  v.kind_ = Kind::Object;
  v.object_ = std::make_shared<ObjectData>();
  return v;
}
Value Value::namespace_object() {
  Value v;
  v.kind_ = Kind::Namespace;
  v.object_ = std::make_shared<ObjectData>();
  return v;
}
Value Value::callable(std::shared_ptr<Callable> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.callable_ = std::move(fn);
  return v;
}

Result<Value> Value::from_json(const nlohmann::ordered_json& json, int depth) {
  if (depth >= kMaxValueDepth) {
    return Error{"JSON nested deeper than " + std::to_string(kMaxValueDepth) + " levels"};
  }
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null:
      return none();
    case nlohmann::ordered_json::value_t::boolean:
      return boolean(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return integer(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return integer(static_cast<int64_t>(u));
      return floating(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return floating(json.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return string(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) {
        GUFO_ASSIGN_OR_RETURN(Value v, from_json(item, depth + 1));
        items.push_back(std::move(v));
      }
      return array(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Value obj = object();
      for (const auto& [key, item] : json.items()) {
        GUFO_ASSIGN_OR_RETURN(Value v, from_json(item, depth + 1));
        obj.fields().set(key, std::move(v));
      }
      return obj;
    }
    default:
      return none();
  }
}

int Value::depth() const {
  if (kind_ == Kind::Array) return array_depth_;
  if (kind_ == Kind::Object || kind_ == Kind::Namespace) return object_->depth();
  return 0;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return bool_;
    case Kind::Int:
      return int_ != 0;
    case Kind::Float:
      return float_ != 0.0;
    case Kind::String:
      return !string_->empty();
    case Kind::Array:
      return !array_->empty();
    case Kind::Object:
      return object_->size() > 0;
    case Kind::Namespace:
    case Kind::Callable:
      return true;
  }
  return false;
}

bool Value::equals(const Value& other) const {
  const bool numeric = is_number() || is_bool();
  const bool other_numeric = other.is_number() || other.is_bool();
  if (numeric && other_numeric) {
    if ((is_int() || is_bool()) && (other.is_int() || other.is_bool())) {
      const int64_t a = is_bool() ? int64_t{bool_} : int_;
      const int64_t b = other.is_bool() ? int64_t{other.bool_} : other.int_;
      return a == b;
    }
    const double a = is_bool() ? double{static_cast<double>(bool_)} : as_number();
    const double b = other.is_bool() ? double{static_cast<double>(other.bool_)} : other.as_number();
    return a == b;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return *string_ == *other.string_;
    case Kind::Array: {
      if (array_ == other.array_) return true;
      if (array_->size() != other.array_->size()) return false;
      for (size_t i = 0; i < array_->size(); ++i) {
        if (!(*array_)[i].equals((*other.array_)[i])) return false;
      }
      return true;
    }
    case Kind::Object: {
      if (object_ == other.object_) return true;
      if (object_->size() != other.object_->size()) return false;
      for (const auto& [key, item] : object_->entries()) {
        const Value* found = other.object_->find(key);
        if (found == nullptr || !item.equals(*found)) return false;
      }
      return true;
    }
    case Kind::Namespace:
      return object_ == other.object_;
    case Kind::Callable:
      return callable_ == other.callable_;
    default:
      return false;
  }
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined:
      return "undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Array:
      return "list";
    case Kind::Object:
      return "dict";
    case Kind::Namespace:
      return "Namespace";
    case Kind::Callable:
      return "function";
  }
  return "?";
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's repr layout: positional for 1e-4 <= |d| < 1e16.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  const size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  const bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out +=
          digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp_buf;
}

std::string to_output_string(const Value& value) {
  switch (value.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return "";
    case Kind::Bool:
      return value.as_bool() ? "true" : "false";
    case Kind::Int:
      return std::to_string(value.as_int());
    case Kind::Float:
      return format_float(value.as_number());
    case Kind::String:
      return value.as_string();
    case Kind::Callable:
      return "<function>";
    default: {
      std::string out, error;
      JsonOptions options;
      if (!to_json_text(value, options, out, error)) return "";
      return out;
    }
  }
}

namespace {

void append_json_string(const std::string& text, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    char buf[16];
    if (c < 0x20) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else if (c >= 0x80 && ensure_ascii) {
      // Decode one UTF-8 sequence; emit \uXXXX (surrogate pairs above the BMP), as Python does.
      uint32_t cp = 0;
      size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
      if (i + len > text.size()) len = 1;
      cp = len == 1 ? c : (c & (0x7F >> len));
      for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
      i += len - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

}  // namespace

bool to_json_text(const Value& value, const JsonOptions& options, std::string& out, std::string& error, int depth) {
  if (depth > 512) {
    error = "tojson: nesting deeper than 512";
    return false;
  }
  const std::string item_sep = options.has_separators ? options.item_separator : options.indent >= 0 ? "," : ", ";
  const std::string& key_sep = options.key_separator;
  auto newline = [&](int level) {
    if (options.indent < 0) return;
    out += '\n';
    out.append(static_cast<size_t>(options.indent) * static_cast<size_t>(level), ' ');
  };
  switch (value.kind()) {
    case Kind::Undefined:
    case Kind::None:
      out += "null";
      return true;
    case Kind::Bool:
      out += value.as_bool() ? "true" : "false";
      return true;
    case Kind::Int:
      out += std::to_string(value.as_int());
      return true;
    case Kind::Float: {
      const double d = value.as_number();
      if (std::isnan(d))
        out += "NaN";
      else if (std::isinf(d))
        out += d < 0 ? "-Infinity" : "Infinity";
      else
        out += format_float(d);
      return true;
    }
    case Kind::String:
      append_json_string(value.as_string(), options.ensure_ascii, out);
      return true;
    case Kind::Array: {
      const auto& items = value.items();
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += item_sep;
        newline(depth + 1);
        if (!to_json_text(items[i], options, out, error, depth + 1)) return false;
      }
      if (!items.empty()) newline(depth);
      out += ']';
      return true;
    }
    case Kind::Object:
    case Kind::Namespace: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& entry : value.fields().entries()) entries.push_back(&entry);
      if (options.sort_keys) {
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto* a, const auto* b) { return a->first < b->first; });
      }
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i > 0) out += item_sep;
        newline(depth + 1);
        append_json_string(entries[i]->first, options.ensure_ascii, out);
        out += key_sep;
        if (!to_json_text(entries[i]->second, options, out, error, depth + 1)) return false;
      }
      if (!entries.empty()) newline(depth);
      out += '}';
      return true;
    }
    case Kind::Callable:
      error = "tojson: a function is not JSON serializable";
      return false;
  }
  return false;
}

}  // namespace gufo::tmpl
