// Filters (x | name(args)): the Jinja2 filters chat templates use. Where Python's Jinja2 and
// @huggingface/jinja disagree on output, this follows @huggingface/jinja (the parity oracle).
// Unknown filters are errors. Tested through tests/unit/template/template_test.cpp.
#include "template/builtins.h"
#include "template/unicode_space.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace gufo::tmpl {

std::string ascii_upper(std::string s) {
  for (char& c : s) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return s;
}

std::string ascii_lower(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

std::string title_case(const std::string& s) {
  // JavaScript's /\b\w/g: a word character not preceded by a word character.
  std::string out = s;
  auto is_word = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  };
  for (size_t i = 0; i < out.size(); ++i) {
    if (is_word(out[i]) && (i == 0 || !is_word(out[i - 1])) && out[i] >= 'a' && out[i] <= 'z') {
      out[i] = static_cast<char>(out[i] - 'a' + 'A');
    }
  }
  return out;
}

std::string capitalize_text(const std::string& s) {
  std::string out = s;
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 'a' + 'A');
  return out;
}

namespace {

std::string trim_text(const std::string& s, const Value* chars) {
  if (chars == nullptr || !chars->is_string()) {
    const size_t end = skip_spaces_backward(s, 0, s.size());
    const size_t begin = skip_spaces_forward(s, 0, end);
    return s.substr(begin, end - begin);
  }
  size_t begin = 0, end = s.size();
  auto strip = [&](char c) { return chars->as_string().find(c) != std::string::npos; };
  while (begin < end && strip(s[begin])) ++begin;
  while (end > begin && strip(s[end - 1])) --end;
  return s.substr(begin, end - begin);
}

Result<bool> bool_argument(const CallArgs& args, size_t index, const char* name, bool fallback) {
  const Value* v = args.get(index, name);
  if (v == nullptr) return fallback;
  if (v->is_bool()) return v->as_bool();
  if (v->is_int()) return v->as_int() != 0;
  return Error{std::string("argument '") + name + "' must be a boolean, not " + v->type_name()};
}

// Dotted attribute path ("function.name", "0") of an item, as Jinja2's make_attrgetter.
Value attribute_of(const Value& item, const std::string& path) {
  Value current = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (current.is_mapping_like()) {
      const Value* found = current.fields().find(part);
      current = found != nullptr ? *found : Value();
    } else if (current.is_array() && !part.empty() &&
               std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; }) && part.size() < 10) {
      const size_t index = std::stoul(part);
      current = index < current.items().size() ? current.items()[index] : Value();
    } else {
      return Value();
    }
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

Result<std::vector<Value>> as_list(const Value& v, const std::string& filter) {
  switch (v.kind()) {
    case Kind::Array:
      return v.items();
    case Kind::String: {
      std::vector<Value> out;
      for (std::string_view cp : split_code_points(v.as_string())) out.push_back(Value::string(std::string(cp)));
      return out;
    }
    case Kind::Object: {
      std::vector<Value> out;
      for (const auto& entry : v.fields().entries()) out.push_back(Value::string(entry.first));
      return out;
    }
    case Kind::Undefined:
      return std::vector<Value>{};
    default:
      return Error{"filter '" + filter + "' needs a list, got a " + v.type_name()};
  }
}

Result<Value> tojson_filter(const Value& v, const CallArgs& args) {
  JsonOptions options;
  const Value* indent = args.get(99, "indent");  // keyword only, as transformers
  if (indent != nullptr && !indent->is_none()) {
    if (!indent->is_int()) return Error{"tojson: indent must be an integer"};
    options.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
  }
  GUFO_ASSIGN_OR_RETURN(options.ensure_ascii, bool_argument(args, 99, "ensure_ascii", false));
  GUFO_ASSIGN_OR_RETURN(options.sort_keys, bool_argument(args, 99, "sort_keys", false));
  const Value* separators = args.get(99, "separators");
  if (separators != nullptr && !separators->is_none()) {
    if (!separators->is_array() || separators->items().size() != 2 || !separators->items()[0].is_string() ||
        !separators->items()[1].is_string()) {
      return Error{"tojson: separators must be a pair of strings"};
    }
    options.has_separators = true;
    options.item_separator = separators->items()[0].as_string();
    options.key_separator = separators->items()[1].as_string();
  }
  std::string out, error;
  if (!to_json_text(v, options, out, error)) return Error{error};
  if (out.size() > kMaxStringBytes) return Error{"tojson: result longer than the limit"};
  return Value::string(std::move(out));
}

Result<Value> join_filter(const Value& v, const CallArgs& args) {
  GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, "join"));
  const Value* sep = args.get(0, "d");
  const Value* attribute = args.get(1, "attribute");
  std::string separator = sep != nullptr ? to_output_string(*sep) : "";
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    const Value item = attribute != nullptr ? attribute_of(items[i], to_output_string(*attribute)) : items[i];
    out += to_output_string(item);
    if (out.size() > kMaxStringBytes) return Error{"join: result longer than the limit"};
  }
  return Value::string(std::move(out));
}

Result<Value> indent_filter(const Value& v, const CallArgs& args) {
  if (!v.is_string()) return Error{std::string("indent needs a string, got a ") + v.type_name()};
  const Value* width = args.get(0, "width");
  std::string pad = "    ";
  if (width != nullptr) {
    if (width->is_string())
      pad = width->as_string();
    else if (width->is_int())
      pad = std::string(static_cast<size_t>(std::clamp<int64_t>(width->as_int(), 0, 256)), ' ');
    else
      return Error{"indent: width must be an integer or a string"};
  }
  GUFO_ASSIGN_OR_RETURN(bool first, bool_argument(args, 1, "first", false));
  GUFO_ASSIGN_OR_RETURN(bool blank, bool_argument(args, 2, "blank", false));
  const std::string& text = v.as_string();
  std::string out;
  size_t start = 0;
  for (size_t line_index = 0;; ++line_index) {
    const size_t nl = text.find('\n', start);
    const std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if ((line_index > 0 || first) && (blank || !line.empty())) out += pad;
    out += line;
    if (out.size() > kMaxStringBytes) return Error{"indent: result longer than the limit"};
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return Value::string(std::move(out));
}

// selectattr / rejectattr / select / reject.
Result<Value> select_filter(const std::string& name, const Value& v, const CallArgs& args) {
  const bool by_attribute = name == "selectattr" || name == "rejectattr";
  const bool keep_matching = name == "selectattr" || name == "select";
  GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, name));
  size_t next_arg = 0;
  std::string attribute;
  if (by_attribute) {
    if (args.positional.empty() || !args.positional[0].is_string()) {
      return Error{name + " needs an attribute name"};
    }
    attribute = args.positional[0].as_string();
    next_arg = 1;
  }
  std::string test;
  CallArgs test_args;
  if (next_arg < args.positional.size()) {
    if (!args.positional[next_arg].is_string()) return Error{name + ": the test name must be a string"};
    test = args.positional[next_arg].as_string();
    if (!is_known_test(test)) return Error{"unknown test '" + test + "'"};
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next_arg) + 1,
                                args.positional.end());
  }
  std::vector<Value> out;
  for (const Value& item : items) {
    const Value subject = by_attribute ? attribute_of(item, attribute) : item;
    bool matched = false;
    if (test.empty()) {
      matched = subject.truthy();
    } else {
      GUFO_ASSIGN_OR_RETURN(matched, apply_test(test, subject, test_args));
    }
    if (matched == keep_matching) out.push_back(item);
  }
  return Value::array(std::move(out));
}

Result<Value> map_filter(const Value& v, const CallArgs& args) {
  GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, "map"));
  std::vector<Value> out;
  for (const auto& [key, value] : args.keyword) {
    if (key != "attribute") continue;
    const Value* fallback = nullptr;
    for (const auto& [k2, v2] : args.keyword) {
      if (k2 == "default") fallback = &v2;
    }
    for (const Value& item : items) {
      Value mapped = attribute_of(item, to_output_string(value));
      if (mapped.is_undefined() && fallback != nullptr) mapped = *fallback;
      out.push_back(std::move(mapped));
    }
    return Value::array(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string()) {
    return Error{"map needs attribute=... or a filter name"};
  }
  CallArgs filter_args;
  filter_args.positional.assign(args.positional.begin() + 1, args.positional.end());
  filter_args.keyword = args.keyword;
  for (const Value& item : items) {
    GUFO_ASSIGN_OR_RETURN(Value mapped, apply_filter(args.positional[0].as_string(), item, filter_args));
    out.push_back(std::move(mapped));
  }
  return Value::array(std::move(out));
}

Result<Value> sort_filter(const Value& v, const CallArgs& args) {
  GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, "sort"));
  GUFO_ASSIGN_OR_RETURN(bool reverse, bool_argument(args, 0, "reverse", false));
  GUFO_ASSIGN_OR_RETURN(bool case_sensitive, bool_argument(args, 1, "case_sensitive", false));
  const Value* attribute = args.get(2, "attribute");
  std::vector<std::pair<Value, Value>> keyed;
  keyed.reserve(items.size());
  for (const Value& item : items) {
    keyed.emplace_back(attribute != nullptr ? attribute_of(item, to_output_string(*attribute)) : item, item);
  }
  // Compare once up front so a type error is reported rather than left to the sort.
  for (size_t i = 1; i < keyed.size(); ++i) {
    GUFO_RETURN_IF_ERROR(compare_values(keyed[i - 1].first, keyed[i].first, case_sensitive));
  }
  bool failed = false;
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    Result<int> cmp = compare_values(a.first, b.first, case_sensitive);
    if (!cmp.ok()) {
      failed = true;
      return false;
    }
    return reverse ? *cmp > 0 : *cmp < 0;
  });
  if (failed) return Error{"sort: cannot compare the items"};
  std::vector<Value> out;
  out.reserve(keyed.size());
  for (auto& entry : keyed) out.push_back(std::move(entry.second));
  return Value::array(std::move(out));
}

Result<Value> number_filter(const std::string& name, const Value& v, const CallArgs& args) {
  const Value* fallback = args.get(0, "default");
  if (name == "int") {
    if (v.is_int()) return v;
    if (v.is_bool()) return Value::integer(v.as_bool() ? 1 : 0);
    if (v.is_float()) {
      const double d = std::trunc(v.as_number());
      if (!(d >= -9.2e18 && d <= 9.2e18)) return Error{"int: value out of range"};
      return Value::integer(static_cast<int64_t>(d));
    }
    if (v.is_string()) {
      const std::string text = trim_text(v.as_string(), nullptr);
      char* end = nullptr;
      errno = 0;
      const long long parsed = std::strtoll(text.c_str(), &end, 10);
      if (!text.empty() && end == text.c_str() + text.size() && errno != ERANGE) return Value::integer(parsed);
    }
    return fallback != nullptr ? *fallback : Value::integer(0);
  }
  if (v.is_number()) return Value::floating(v.as_number());
  if (v.is_bool()) return Value::floating(v.as_bool() ? 1.0 : 0.0);
  if (v.is_string()) {
    const std::string text = trim_text(v.as_string(), nullptr);
    char* end = nullptr;
    const double parsed = std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size()) return Value::floating(parsed);
  }
  return fallback != nullptr ? *fallback : Value::floating(0.0);
}

Result<Value> round_filter(const Value& v, const CallArgs& args) {
  if (!v.is_number()) return Error{std::string("round needs a number, got a ") + v.type_name()};
  const Value* precision_value = args.get(0, "precision");
  const Value* method_value = args.get(1, "method");
  const int64_t precision = precision_value != nullptr && precision_value->is_int()
                                ? std::clamp<int64_t>(precision_value->as_int(), 0, 15)
                                : 0;
  const std::string method = method_value != nullptr ? to_output_string(*method_value) : "common";
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double x = v.as_number() * scale;
  double r = 0;
  // NOTE(template): Python's round() (which Jinja2's 'common' uses) rounds halves to even.
  if (method == "common")
    r = precision == 0 ? std::nearbyint(x) : std::round(x);
  else if (method == "ceil")
    r = std::ceil(x);
  else if (method == "floor")
    r = std::floor(x);
  else
    return Error{"round: method must be 'common', 'ceil' or 'floor'"};
  return Value::floating(r / scale);
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

Result<Value> apply_filter(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "safe") return v;
  if (name == "tojson") return tojson_filter(v, args);
  if (name == "default" || name == "d") {
    const Value* fallback = args.get(0, "default_value");
    GUFO_ASSIGN_OR_RETURN(bool boolean, bool_argument(args, 1, "boolean", false));
    if (v.is_undefined() || (boolean && !v.truthy())) return fallback != nullptr ? *fallback : Value::string("");
    return v;
  }
  if (name == "length" || name == "count") {
    if (v.is_string()) return Value::integer(static_cast<int64_t>(split_code_points(v.as_string()).size()));
    if (v.is_array()) return Value::integer(static_cast<int64_t>(v.items().size()));
    if (v.is_mapping_like()) return Value::integer(static_cast<int64_t>(v.fields().size()));
    if (v.is_undefined()) return Value::integer(0);
    return Error{"filter '" + name + "' needs a string, list or dict, got a " + v.type_name()};
  }
  if (name == "string") {
    if (v.is_none()) return Value::string("None");
    return Value::string(to_output_string(v));
  }
  if (name == "trim" || name == "upper" || name == "lower" || name == "title" || name == "capitalize" ||
      name == "replace" || name == "indent" || name == "e" || name == "escape") {
    if (v.is_undefined() && name != "indent" && name != "replace") return Value::string("");
    if (!v.is_string()) return Error{"filter '" + name + "' needs a string, got a " + v.type_name()};
    const std::string& s = v.as_string();
    if (name == "trim") return Value::string(trim_text(s, args.get(0, "chars")));
    if (name == "upper") return Value::string(ascii_upper(s));
    if (name == "lower") return Value::string(ascii_lower(s));
    if (name == "title") return Value::string(title_case(s));
    if (name == "capitalize") return Value::string(capitalize_text(s));
    if (name == "e" || name == "escape") return Value::string(html_escape(s));
    if (name == "indent") return indent_filter(v, args);
    return call_method(v, "replace", args);
  }
  if (name == "join") return join_filter(v, args);
  if (name == "list") {
    GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, name));
    return Value::array(std::move(items));
  }
  if (name == "first" || name == "last") {
    GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, name));
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string_view> cps = split_code_points(v.as_string());
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::string(std::move(out));
    }
    GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, name));
    std::reverse(items.begin(), items.end());
    return Value::array(std::move(items));
  }
  if (name == "items" || name == "dictsort") {
    if (v.is_undefined()) return Value::array();
    if (!v.is_mapping_like()) return Error{"filter '" + name + "' needs a dict, got a " + v.type_name()};
    std::vector<Value> out;
    for (const auto& [key, value] : v.fields().entries()) out.push_back(Value::array({Value::string(key), value}));
    if (name == "dictsort") {
      std::stable_sort(out.begin(), out.end(), [](const Value& a, const Value& b) {
        return ascii_lower(a.items()[0].as_string()) < ascii_lower(b.items()[0].as_string());
      });
    }
    return Value::array(std::move(out));
  }
  if (name == "unique") {
    GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, name));
    std::vector<Value> out;
    for (const Value& item : items) {
      if (std::none_of(out.begin(), out.end(), [&](const Value& x) { return x.equals(item); })) out.push_back(item);
    }
    return Value::array(std::move(out));
  }
  if (name == "selectattr" || name == "rejectattr" || name == "select" || name == "reject") {
    return select_filter(name, v, args);
  }
  if (name == "map") return map_filter(v, args);
  if (name == "sort") return sort_filter(v, args);
  if (name == "int" || name == "float") return number_filter(name, v, args);
  if (name == "abs") {
    if (v.is_float()) return Value::floating(std::fabs(v.as_number()));
    if (v.is_int()) {
      if (v.as_int() == INT64_MIN) return Error{"abs: integer overflow"};
      return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    return Error{std::string("abs needs a number, got a ") + v.type_name()};
  }
  if (name == "round") return round_filter(v, args);
  if (name == "sum") {
    GUFO_ASSIGN_OR_RETURN(std::vector<Value> items, as_list(v, name));
    Value total = Value::integer(0);
    for (const Value& item : items) {
      if (!item.is_number() && !item.is_bool()) return Error{std::string("sum: cannot add a ") + item.type_name()};
      if (total.is_int() && (item.is_int() || item.is_bool())) {
        int64_t r = 0;
        const int64_t x = item.is_bool() ? item.as_bool() : item.as_int();
        if (__builtin_add_overflow(total.as_int(), x, &r)) return Error{"sum: integer overflow"};
        total = Value::integer(r);
      } else {
        total = Value::floating(total.as_number() + (item.is_bool() ? item.as_bool() : item.as_number()));
      }
    }
    return total;
  }
  return Error{"unknown filter '" + name + "'"};
}

}  // namespace gufo::tmpl
