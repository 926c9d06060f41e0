// Built-ins other than filters: tests (is defined, is string, ...), methods of strings and
// dicts (Python's str.split, str.strip, dict.get, ...), global functions, UTF-8 helpers.
// Tested through tests/unit/template/template_test.cpp.
#include "template/builtins.h"
#include "template/unicode_space.h"

#include <algorithm>
#include <ctime>

namespace gufo::tmpl {

std::vector<std::string_view> split_code_points(const std::string& text) {
  std::vector<std::string_view> out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    if (i + len > text.size()) len = 1;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80) {
        len = 1;
        break;
      }
    }
    out.emplace_back(text.data() + i, len);
    i += len;
  }
  return out;
}

Result<int> compare_values(const Value& a, const Value& b, bool case_sensitive) {
  const bool a_num = a.is_number() || a.is_bool();
  const bool b_num = b.is_number() || b.is_bool();
  if (a_num && b_num) {
    if ((a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool())) {
      const int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
      const int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    const double x = a.is_bool() ? (a.as_bool() ? 1.0 : 0.0) : a.as_number();
    const double y = b.is_bool() ? (b.as_bool() ? 1.0 : 0.0) : b.as_number();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    std::string x = a.as_string(), y = b.as_string();
    if (!case_sensitive) {
      for (char& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      for (char& c : y) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    const int cmp = x.compare(y);
    return cmp < 0 ? -1 : cmp > 0 ? 1 : 0;
  }
  return Error{std::string("cannot compare a ") + a.type_name() + " with a " + b.type_name()};
}

// ---------------------------------------------------------------- tests

namespace {

Result<const Value*> test_argument(const std::string& name, const CallArgs& args) {
  const Value* arg = args.get(0, "value");
  if (arg == nullptr) return Error{"test '" + name + "' needs an argument"};
  return arg;
}

bool is_lower_text(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}
bool is_upper_text(const std::string& s) {
  return std::none_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

const char* const kTestNames[] = {
    "defined",  "undefined", "none",  "string", "number",  "integer",     "float",   "mapping", "iterable", "sequence",
    "boolean",  "true",      "false", "odd",    "even",    "divisibleby", "equalto", "eq",      "==",       "ne",
    "!=",       "lt",        "<",     "le",     "<=",      "gt",          ">",       "ge",      ">=",       "in",
    "callable", "lower",     "upper", "sameas", "escaped", "filter",      "test"};

}  // namespace

bool is_known_test(const std::string& name) {
  return std::find(std::begin(kTestNames), std::end(kTestNames), name) != std::end(kTestNames);
}

Result<bool> apply_test(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  // NOTE(template): as @huggingface/jinja, booleans are not numbers here (Python says they are).
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "mapping") return v.is_object();
  if (name == "iterable") return v.is_array() || v.is_string() || v.is_object();
  if (name == "sequence") return v.is_array() || v.is_string() || v.is_object();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "callable") return v.is_callable();
  if (name == "lower") return v.is_string() && is_lower_text(v.as_string());
  if (name == "upper") return v.is_string() && is_upper_text(v.as_string());
  if (name == "escaped") return false;
  if (name == "odd" || name == "even") {
    if (!v.is_int()) return Error{"test '" + name + "' needs an integer, got a " + v.type_name()};
    const bool odd = v.as_int() % 2 != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    GUFO_ASSIGN_OR_RETURN(const Value* arg, test_argument(name, args));
    if (!v.is_int() || !arg->is_int()) return Error{"test 'divisibleby' needs integers"};
    if (arg->as_int() == 0) return Error{"test 'divisibleby' by zero"};
    if (arg->as_int() == -1) return true;
    return v.as_int() % arg->as_int() == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") {
    GUFO_ASSIGN_OR_RETURN(const Value* arg, test_argument(name, args));
    return v.equals(*arg);
  }
  if (name == "ne" || name == "!=") {
    GUFO_ASSIGN_OR_RETURN(const Value* arg, test_argument(name, args));
    return !v.equals(*arg);
  }
  if (name == "lt" || name == "<" || name == "le" || name == "<=" || name == "gt" || name == ">" || name == "ge" ||
      name == ">=") {
    GUFO_ASSIGN_OR_RETURN(const Value* arg, test_argument(name, args));
    GUFO_ASSIGN_OR_RETURN(int cmp, compare_values(v, *arg));
    if (name == "lt" || name == "<") return cmp < 0;
    if (name == "le" || name == "<=") return cmp <= 0;
    if (name == "gt" || name == ">") return cmp > 0;
    return cmp >= 0;
  }
  if (name == "in") {
    GUFO_ASSIGN_OR_RETURN(const Value* arg, test_argument(name, args));
    if (arg->is_string()) return v.is_string() && arg->as_string().find(v.as_string()) != std::string::npos;
    if (arg->is_array()) {
      return std::any_of(arg->items().begin(), arg->items().end(), [&](const Value& x) { return x.equals(v); });
    }
    if (arg->is_mapping_like()) return v.is_string() && arg->fields().find(v.as_string()) != nullptr;
    return Error{std::string("test 'in' needs a container, got a ") + arg->type_name()};
  }
  return Error{"unknown test '" + name + "'"};
}

// ---------------------------------------------------------------- methods

namespace {

bool is_py_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

Result<std::string> string_argument(const CallArgs& args, size_t index, const char* name, const std::string& method) {
  const Value* v = args.get(index, name);
  if (v == nullptr) return Error{method + "() missing argument '" + name + "'"};
  if (!v->is_string()) return Error{method + "() argument '" + name + "' must be a string, not " + v->type_name()};
  return v->as_string();
}

// Python's str.strip family: with no chars (or None), whitespace.
Result<Value> strip_method(const std::string& text, const CallArgs& args, bool left, bool right,
                           const std::string& method) {
  const Value* chars = args.get(0, "chars");
  std::string set;
  bool whitespace = true;
  if (chars != nullptr && !chars->is_none()) {
    if (!chars->is_string()) return Error{method + "() argument must be a string or None"};
    set = chars->as_string();
    whitespace = false;
  }
  size_t begin = 0, end = text.size();
  if (whitespace) {
    if (right) end = skip_spaces_backward(text, 0, end);
    if (left) begin = skip_spaces_forward(text, 0, end);
    return Value::string(text.substr(begin, end - begin));
  }
  auto strip_this = [&](char c) { return set.find(c) != std::string::npos; };
  if (left) {
    while (begin < end && strip_this(text[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strip_this(text[end - 1])) --end;
  }
  return Value::string(text.substr(begin, end - begin));
}

Result<Value> split_method(const std::string& text, const CallArgs& args) {
  const Value* sep = args.get(0, "sep");
  const Value* maxsplit_value = args.get(1, "maxsplit");
  int64_t maxsplit = -1;
  if (maxsplit_value != nullptr) {
    if (!maxsplit_value->is_int()) return Error{"split() maxsplit must be an integer"};
    maxsplit = maxsplit_value->as_int();
  }
  std::vector<Value> parts;
  if (sep == nullptr || sep->is_none()) {
    size_t i = 0;
    while (true) {
      i = skip_spaces_forward(text, i, text.size());
      if (i >= text.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) {
        const size_t end = skip_spaces_backward(text, i, text.size());
        parts.push_back(Value::string(text.substr(i, end - i)));
        break;
      }
      size_t j = i;
      while (j < text.size() && space_length_at(text, j) == 0) ++j;
      parts.push_back(Value::string(text.substr(i, j - i)));
      i = j;
    }
    return Value::array(std::move(parts));
  }
  if (!sep->is_string()) return Error{"split() separator must be a string or None"};
  const std::string& s = sep->as_string();
  if (s.empty()) return Error{"split(): empty separator"};
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) >= maxsplit) break;
    const size_t found = text.find(s, start);
    if (found == std::string::npos) break;
    parts.push_back(Value::string(text.substr(start, found - start)));
    start = found + s.size();
  }
  parts.push_back(Value::string(text.substr(start)));
  return Value::array(std::move(parts));
}

Result<Value> replace_text(const std::string& text, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {
    // Python inserts `to` around every code point.
    int64_t done = 0;
    for (std::string_view cp : split_code_points(text)) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      out += cp;
    }
    if (count < 0 || done < count) out += to;
  } else {
    size_t start = 0;
    int64_t done = 0;
    while (count < 0 || done < count) {
      const size_t found = text.find(from, start);
      if (found == std::string::npos) break;
      out.append(text, start, found - start);
      out += to;
      start = found + from.size();
      ++done;
      if (out.size() > kMaxStringBytes) return Error{"replace(): result longer than the limit"};
    }
    out.append(text, start, std::string::npos);
  }
  if (out.size() > kMaxStringBytes) return Error{"replace(): result longer than the limit"};
  return Value::string(std::move(out));
}

Result<Value> prefix_method(const std::string& text, const CallArgs& args, bool prefix) {
  const char* method = prefix ? "startswith" : "endswith";
  const Value* arg = args.get(0, prefix ? "prefix" : "suffix");
  if (arg == nullptr) return Error{std::string(method) + "() needs an argument"};
  auto matches = [&](const std::string& p) {
    if (p.size() > text.size()) return false;
    return prefix ? text.compare(0, p.size(), p) == 0 : text.compare(text.size() - p.size(), p.size(), p) == 0;
  };
  if (arg->is_string()) return Value::boolean(matches(arg->as_string()));
  if (arg->is_array()) {
    for (const Value& item : arg->items()) {
      if (!item.is_string()) return Error{std::string(method) + "() tuple items must be strings"};
      if (matches(item.as_string())) return Value::boolean(true);
    }
    return Value::boolean(false);
  }
  return Error{std::string(method) + "() argument must be a string or a tuple of strings"};
}

Result<Value> string_method(const std::string& text, const std::string& name, const CallArgs& args) {
  if (name == "upper") return Value::string(ascii_upper(text));
  if (name == "lower") return Value::string(ascii_lower(text));
  if (name == "title") return Value::string(title_case(text));
  if (name == "capitalize") return Value::string(capitalize_text(text));
  if (name == "strip") return strip_method(text, args, true, true, name);
  if (name == "lstrip") return strip_method(text, args, true, false, name);
  if (name == "rstrip") return strip_method(text, args, false, true, name);
  if (name == "startswith") return prefix_method(text, args, true);
  if (name == "endswith") return prefix_method(text, args, false);
  if (name == "split") return split_method(text, args);
  if (name == "replace") {
    GUFO_ASSIGN_OR_RETURN(std::string from, string_argument(args, 0, "old", name));
    GUFO_ASSIGN_OR_RETURN(std::string to, string_argument(args, 1, "new", name));
    const Value* count = args.get(2, "count");
    if (count != nullptr && !count->is_int() && !count->is_none()) return Error{"replace() count must be an integer"};
    return replace_text(text, from, to, count != nullptr && count->is_int() ? count->as_int() : -1);
  }
  if (name == "find" || name == "count") {
    GUFO_ASSIGN_OR_RETURN(std::string needle, string_argument(args, 0, "sub", name));
    if (name == "find") {
      const size_t at = text.find(needle);
      if (at == std::string::npos) return Value::integer(-1);
      return Value::integer(static_cast<int64_t>(split_code_points(text.substr(0, at)).size()));
    }
    if (needle.empty()) return Value::integer(static_cast<int64_t>(split_code_points(text).size()) + 1);
    int64_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
    return Value::integer(n);
  }
  if (name == "join") {
    const Value* items = args.get(0, "iterable");
    if (items == nullptr || !items->is_array()) return Error{"join() needs a list"};
    std::string out;
    for (size_t i = 0; i < items->items().size(); ++i) {
      const Value& item = items->items()[i];
      if (!item.is_string()) return Error{std::string("join() items must be strings, found a ") + item.type_name()};
      if (i > 0) out += text;
      out += item.as_string();
      if (out.size() > kMaxStringBytes) return Error{"join(): result longer than the limit"};
    }
    return Value::string(std::move(out));
  }
  if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
    if (text.empty()) return Value::boolean(false);
    for (char c : text) {
      const auto u = static_cast<unsigned char>(c);
      const bool ok = name == "isdigit"   ? std::isdigit(u) != 0
                      : name == "isspace" ? is_py_space(c)
                      : name == "isalpha" ? std::isalpha(u) != 0
                                          : std::isalnum(u) != 0;
      if (!ok) return Value::boolean(false);
    }
    return Value::boolean(true);
  }
  return Error{"unknown method 'str." + name + "'"};
}

Result<Value> dict_method(const Value& object, const std::string& name, const CallArgs& args) {
  const ObjectData& fields = object.fields();
  if (name == "get") {
    const Value* key = args.get(0, "key");
    if (key == nullptr) return Error{"get() needs a key"};
    const Value* fallback = args.get(1, "default");
    const Value* found = key->is_string() ? fields.find(key->as_string()) : nullptr;
    if (found != nullptr) return *found;
    return fallback != nullptr ? *fallback : Value::none();
  }
  if (name == "items" || name == "keys" || name == "values") {
    std::vector<Value> out;
    for (const auto& [key, value] : fields.entries()) {
      if (name == "items")
        out.push_back(Value::array({Value::string(key), value}));
      else if (name == "keys")
        out.push_back(Value::string(key));
      else
        out.push_back(value);
    }
    return Value::array(std::move(out));
  }
  return Error{"unknown method 'dict." + name + "'"};
}

}  // namespace

Result<Value> call_method(const Value& object, const std::string& name, const CallArgs& args) {
  if (object.is_string()) return string_method(object.as_string(), name, args);
  if (object.is_object()) return dict_method(object, name, args);
  if (object.is_array() && (name == "append" || name == "pop" || name == "insert" || name == "extend")) {
    return Error{"list." + name + "() is not allowed: lists are immutable in chat templates"};
  }
  return Error{"unknown method '" + name + "' of a " + object.type_name()};
}

// ---------------------------------------------------------------- globals

namespace {

Result<Value> range_function(const CallArgs& args) {
  if (!args.keyword.empty()) return Error{"range() takes no keyword arguments"};
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) return Error{"range() takes 1 to 3 arguments"};
  for (const Value& v : p) {
    if (!v.is_int()) return Error{std::string("range() arguments must be integers, not ") + v.type_name()};
  }
  const int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  const int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  const int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) return Error{"range() step must not be zero"};
  // Count in floating point first so huge ranges fail before anything is allocated.
  const long double span = static_cast<long double>(stop) - static_cast<long double>(start);
  const long double count = span / static_cast<long double>(step);
  if (count > static_cast<long double>(kMaxListItems)) {
    return Error{"range() of more than " + std::to_string(kMaxListItems) + " items"};
  }
  std::vector<Value> items;
  // NOTE(template): __int128 so that i + step can never overflow near INT64 limits.
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    items.push_back(Value::integer(i));
    const __int128 next = static_cast<__int128>(i) + step;
    if (step > 0 ? next >= stop : next <= stop) break;
    i = static_cast<int64_t>(next);
  }
  return Value::array(std::move(items));
}

Result<Value> namespace_function(const CallArgs& args) {
  Value ns = Value::namespace_object();
  if (args.positional.size() > 1) return Error{"namespace() takes at most one positional argument"};
  if (args.positional.size() == 1) {
    const Value& init = args.positional[0];
    if (!init.is_object()) return Error{std::string("namespace() needs a dict, got a ") + init.type_name()};
    for (const auto& [key, value] : init.fields().entries()) ns.fields().set(key, value);
  }
  for (const auto& [key, value] : args.keyword) {
    if (value.is_namespace()) return Error{"a namespace() cannot be stored in a namespace"};
    ns.fields().set(key, value);
  }
  return ns;
}

Result<Value> dict_function(const CallArgs& args) {
  Value dict = Value::object();
  if (!args.positional.empty()) return Error{"dict() takes keyword arguments only"};
  for (const auto& [key, value] : args.keyword) {
    if (value.is_namespace()) return Error{"a namespace() cannot be stored in a dict"};
    dict.fields().set(key, value);
  }
  return dict;
}

Result<Value> raise_exception_function(const CallArgs& args) {
  const Value* message = args.get(0, "message");
  return Error{"raise_exception: " + (message != nullptr ? to_output_string(*message) : std::string())};
}

Result<Value> strftime_now_function(const CallArgs& args) {
  const Value* format = args.get(0, "format");
  if (format == nullptr || !format->is_string()) return Error{"strftime_now() needs a format string"};
  if (format->as_string().size() > 256) return Error{"strftime_now(): format longer than 256 bytes"};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[1024];
  const size_t n = std::strftime(buf, sizeof(buf), format->as_string().c_str(), &local);
  return Value::string(std::string(buf, n));
}

void add(Scope& scope, const char* name, BuiltinFunction fn) {
  auto callable = std::make_shared<Callable>();
  callable->name = name;
  callable->builtin = std::move(fn);
  scope.vars[name] = Value::callable(std::move(callable));
}

}  // namespace

void add_global_functions(Scope& scope) {
  add(scope, "range", range_function);
  add(scope, "namespace", namespace_function);
  add(scope, "dict", dict_function);
  add(scope, "raise_exception", raise_exception_function);
  add(scope, "strftime_now", strftime_now_function);
}

}  // namespace gufo::tmpl
