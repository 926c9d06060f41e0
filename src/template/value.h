// Value: the runtime value of the chat-template interpreter (Jinja2 semantics): undefined,
// none, bool, int, float, string, list, dict (insertion-ordered), namespace, callable.
// Lists, dicts and namespaces are shared by reference, as in Python.
// Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gufo::tmpl {

class Value;
struct Callable;

// NOTE(template): values nest at most this deep (JSON input and values built by templates), so
// comparing, printing and destroying them never recurses further; namespaces are never nested.
constexpr int kMaxValueDepth = 512;

class ObjectData;

enum class Kind { Undefined, None, Bool, Int, Float, String, Array, Object, Namespace, Callable };

class Value {
 public:
  Value() = default;  // undefined
  static Value none();
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value floating(double d);
  static Value string(std::string s);
  static Value array(std::vector<Value> items = {});
  static Value object();
  static Value namespace_object();
  static Value callable(std::shared_ptr<Callable> fn);
  // Converts JSON (messages, tools) into values; object key order is kept. Fails on JSON
  // nested deeper than kMaxValueDepth.
  static Result<Value> from_json(const nlohmann::ordered_json& json, int depth = 0);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_none() const { return kind_ == Kind::None; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_int() const { return kind_ == Kind::Int; }
  bool is_float() const { return kind_ == Kind::Float; }
  bool is_number() const { return kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }
  bool is_namespace() const { return kind_ == Kind::Namespace; }
  bool is_mapping_like() const { return kind_ == Kind::Object || kind_ == Kind::Namespace; }
  bool is_callable() const { return kind_ == Kind::Callable; }

  bool as_bool() const { return bool_; }
  int64_t as_int() const { return int_; }
  double as_number() const { return kind_ == Kind::Float ? float_ : static_cast<double>(int_); }
  const std::string& as_string() const { return *string_; }
  std::vector<Value>& items() const { return *array_; }
  ObjectData& fields() const { return *object_; }
  const std::shared_ptr<Callable>& fn() const { return callable_; }
  // Nesting depth: 0 for scalars, 1 + the deepest item for lists, dicts and namespaces.
  int depth() const;

  // Python truthiness: empty strings, lists and dicts are false; undefined and none are false.
  bool truthy() const;
  // Python equality, with int/float/bool compared as numbers; lists and dicts deeply.
  bool equals(const Value& other) const;
  // Python's name of the type, for error messages ("str", "list", "dict", ...).
  const char* type_name() const;

 private:
  Kind kind_ = Kind::Undefined;
  bool bool_ = false;
  int array_depth_ = 0;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<std::vector<Value>> array_;
  std::shared_ptr<ObjectData> object_;
  std::shared_ptr<Callable> callable_;
};

// A dict that keeps insertion order (Python dicts do; tojson prints keys in that order).
class ObjectData {
 public:
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value value);
  const std::vector<std::pair<std::string, Value>>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  void reserve(size_t n) { entries_.reserve(n); }
  int depth() const { return depth_; }  // 1 + the deepest value ever set (never decreases)

 private:
  std::vector<std::pair<std::string, Value>> entries_;
  std::unordered_map<std::string, size_t> index_;
  int depth_ = 1;
};

// How a value prints inside {{ }}: follows @huggingface/jinja, the parity oracle (none and
// undefined print nothing, booleans "true"/"false", floats "1.0", lists and dicts as JSON).
std::string to_output_string(const Value& value);

struct JsonOptions {
  int indent = -1;  // < 0: one line
  bool ensure_ascii = false;
  bool sort_keys = false;
  std::string item_separator;  // empty: Python's default for the indent
  std::string key_separator = ": ";
  bool has_separators = false;
};
// Python json.dumps layout (", " and ": " separators, ensure_ascii=False by default).
// Fails (false, `error` set) on callables and on nesting deeper than 512.
bool to_json_text(const Value& value, const JsonOptions& options, std::string& out, std::string& error, int depth = 0);

// Python float repr (shortest round-trip, "1.0" for integral values, "inf", "nan").
std::string format_float(double d);

}  // namespace gufo::tmpl
