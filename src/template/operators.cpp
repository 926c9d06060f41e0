// Operators: +, -, *, /, //, %, **, ~, comparisons, in, unary -/+, slicing.
// Tested through tests/unit/template/template_test.cpp (overflow, floor semantics, slices).
#include "template/operators.h"

#include <cmath>
#include <limits>
#include <string_view>
#include <vector>

#include "template/builtins.h"

namespace gufo::tmpl {

namespace {

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }
bool integral(const Value& v) { return v.is_int() || v.is_bool(); }
int64_t int_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
double float_of(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_number(); }

Error unsupported(const std::string& op, const Value& lhs, const Value& rhs) {
  if (lhs.is_undefined() || rhs.is_undefined()) {
    return Error{"'" + op + "' on an undefined value"};
  }
  return Error{"unsupported operand types for " + op + ": '" + lhs.type_name() + "' and '" + rhs.type_name() + "'"};
}

Error overflow(const std::string& op) { return Error{"integer overflow in '" + op + "'"}; }

Result<Value> float_result(double d) { return Value::floating(d); }

Result<Value> repeat_string(const std::string& text, int64_t count) {
  if (count <= 0 || text.empty()) return Value::string("");
  if (static_cast<uint64_t>(count) > kMaxStringBytes / text.size()) {
    return Error{"string repetition larger than " + std::to_string(kMaxStringBytes) + " bytes"};
  }
  std::string out;
  out.reserve(text.size() * static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) out += text;
  return Value::string(std::move(out));
}

Result<Value> repeat_list(const std::vector<Value>& items, int64_t count) {
  if (count <= 0 || items.empty()) return Value::array();
  if (static_cast<uint64_t>(count) > kMaxListItems / items.size()) {
    return Error{"list repetition longer than " + std::to_string(kMaxListItems) + " items"};
  }
  std::vector<Value> out;
  for (int64_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::array(std::move(out));
}

Result<Value> int_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  int64_t b = base;
  int64_t e = exponent;
  while (e > 0) {
    if (e & 1) {
      if (__builtin_mul_overflow(result, b, &result)) return overflow("**");
    }
    e >>= 1;
    if (e > 0 && __builtin_mul_overflow(b, b, &b)) return overflow("**");
  }
  return Value::integer(result);
}

Result<Value> arithmetic(const std::string& op, const Value& lhs, const Value& rhs) {
  if (integral(lhs) && integral(rhs)) {
    const int64_t a = int_of(lhs);
    const int64_t b = int_of(rhs);
    int64_t r = 0;
    if (op == "+") {
      if (__builtin_add_overflow(a, b, &r)) return overflow(op);
      return Value::integer(r);
    }
    if (op == "-") {
      if (__builtin_sub_overflow(a, b, &r)) return overflow(op);
      return Value::integer(r);
    }
    if (op == "*") {
      if (__builtin_mul_overflow(a, b, &r)) return overflow(op);
      return Value::integer(r);
    }
    if (op == "/") {
      if (b == 0) return Error{"division by zero"};
      return float_result(static_cast<double>(a) / static_cast<double>(b));
    }
    if (op == "//" || op == "%") {
      if (b == 0) return Error{op == "//" ? "integer division by zero" : "integer modulo by zero"};
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        if (op == "%") return Value::integer(0);
        return overflow(op);
      }
      int64_t q = a / b;
      int64_t m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) {  // Python floors toward negative infinity
        q -= 1;
        m += b;
      }
      return Value::integer(op == "//" ? q : m);
    }
    if (op == "**") {
      if (b < 0) {
        if (a == 0) return Error{"0 cannot be raised to a negative power"};
        return float_result(std::pow(static_cast<double>(a), static_cast<double>(b)));
      }
      return int_power(a, b);
    }
  }
  const double a = float_of(lhs);
  const double b = float_of(rhs);
  if (op == "+") return float_result(a + b);
  if (op == "-") return float_result(a - b);
  if (op == "*") return float_result(a * b);
  if (op == "/") {
    if (b == 0) return Error{"float division by zero"};
    return float_result(a / b);
  }
  if (op == "//") {
    if (b == 0) return Error{"float floor division by zero"};
    return float_result(std::floor(a / b));
  }
  if (op == "%") {
    if (b == 0) return Error{"float modulo by zero"};
    double m = std::fmod(a, b);
    if (m != 0 && ((m < 0) != (b < 0))) m += b;
    return float_result(m);
  }
  if (op == "**") {
    if (a == 0 && b < 0) return Error{"0.0 cannot be raised to a negative power"};
    return float_result(std::pow(a, b));
  }
  return Error{"unknown operator '" + op + "'"};
}

Result<bool> contains(const Value& needle, const Value& haystack) {
  switch (haystack.kind()) {
    case Kind::String:
      if (!needle.is_string()) {
        return Error{std::string("'in <string>' requires a string on the left, not ") + needle.type_name()};
      }
      return haystack.as_string().find(needle.as_string()) != std::string::npos;
    case Kind::Array:
      for (const Value& item : haystack.items()) {
        if (item.equals(needle)) return true;
      }
      return false;
    case Kind::Object:
    case Kind::Namespace:
      return needle.is_string() && haystack.fields().find(needle.as_string()) != nullptr;
    case Kind::Undefined:
      return false;
    default:
      return Error{std::string("argument of type '") + haystack.type_name() + "' is not iterable"};
  }
}

std::string concat_text(const Value& v) {
  if (v.is_none()) return "None";
  return to_output_string(v);
}

}  // namespace

Result<Value> binary_op(const std::string& op, const Value& lhs, const Value& rhs) {
  if (op == "==") return Value::boolean(lhs.equals(rhs));
  if (op == "!=") return Value::boolean(!lhs.equals(rhs));
  if (op == "in" || op == "not in") {
    GUFO_ASSIGN_OR_RETURN(bool found, contains(lhs, rhs));
    return Value::boolean(op == "in" ? found : !found);
  }
  if (op == "~") {
    std::string text = concat_text(lhs) + concat_text(rhs);
    if (text.size() > kMaxStringBytes) return Error{"string longer than the limit"};
    return Value::string(std::move(text));
  }
  if (op == "<" || op == "<=" || op == ">" || op == ">=") {
    GUFO_ASSIGN_OR_RETURN(int cmp, compare_values(lhs, rhs));
    if (op == "<") return Value::boolean(cmp < 0);
    if (op == "<=") return Value::boolean(cmp <= 0);
    if (op == ">") return Value::boolean(cmp > 0);
    return Value::boolean(cmp >= 0);
  }
  if (numeric(lhs) && numeric(rhs)) return arithmetic(op, lhs, rhs);
  if (op == "+") {
    if (lhs.is_string() && rhs.is_string()) {
      if (lhs.as_string().size() + rhs.as_string().size() > kMaxStringBytes) {
        return Error{"string longer than the limit"};
      }
      return Value::string(lhs.as_string() + rhs.as_string());
    }
    if (lhs.is_array() && rhs.is_array()) {
      if (lhs.items().size() + rhs.items().size() > kMaxListItems) return Error{"list longer than the limit"};
      std::vector<Value> items = lhs.items();
      items.insert(items.end(), rhs.items().begin(), rhs.items().end());
      return Value::array(std::move(items));
    }
  }
  if (op == "*") {
    if (lhs.is_string() && integral(rhs)) return repeat_string(lhs.as_string(), int_of(rhs));
    if (integral(lhs) && rhs.is_string()) return repeat_string(rhs.as_string(), int_of(lhs));
    if (lhs.is_array() && integral(rhs)) return repeat_list(lhs.items(), int_of(rhs));
    if (integral(lhs) && rhs.is_array()) return repeat_list(rhs.items(), int_of(lhs));
  }
  if (op == "%" && lhs.is_string()) return Error{"unsupported '%' string formatting"};
  return unsupported(op, lhs, rhs);
}

Result<Value> unary_op(const std::string& op, const Value& operand) {
  if (operand.is_float()) return Value::floating(op == "-" ? -operand.as_number() : operand.as_number());
  if (integral(operand)) {
    const int64_t v = int_of(operand);
    if (op == "+") return Value::integer(v);
    if (v == std::numeric_limits<int64_t>::min()) return overflow("-");
    return Value::integer(-v);
  }
  return Error{"bad operand type for unary " + op + ": '" + operand.type_name() + "'"};
}

Result<Value> slice_value(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop,
                          std::optional<int64_t> step) {
  int64_t s = step.value_or(1);
  if (s == 0) return Error{"slice step cannot be zero"};
  std::vector<std::string_view> cps;
  int64_t n = 0;
  if (object.is_array()) {
    n = static_cast<int64_t>(object.items().size());
  } else if (object.is_string()) {
    cps = split_code_points(object.as_string());
    n = static_cast<int64_t>(cps.size());
  } else if (object.is_undefined()) {
    return Value();
  } else {
    return Error{std::string("cannot slice a ") + object.type_name()};
  }
  // A step longer than the sequence takes one item either way; clamping keeps i + s in range.
  if (s > n + 1) s = n + 1;
  if (s < -(n + 1)) s = -(n + 1);
  // Python's PySlice_AdjustIndices; all values stay within [-1, n], no overflow.
  auto adjust = [n, s](std::optional<int64_t> v, int64_t if_missing) {
    if (!v) return if_missing;
    int64_t x = *v;
    if (x < 0) {
      x = x < -n ? (s < 0 ? -1 : 0) : x + n;
    } else if (x >= n) {
      x = s < 0 ? n - 1 : n;
    }
    return x;
  };
  const int64_t lo = adjust(start, s < 0 ? n - 1 : 0);
  const int64_t hi = adjust(stop, s < 0 ? -1 : n);
  std::vector<Value> items;
  std::string text;
  for (int64_t i = lo; s > 0 ? i < hi : i > hi;) {
    if (object.is_array()) {
      items.push_back(object.items()[static_cast<size_t>(i)]);
    } else {
      text += cps[static_cast<size_t>(i)];
    }
    if ((s > 0 && i > hi - s) || (s < 0 && i < hi - s)) break;  // next step would pass hi
    i += s;
  }
  if (object.is_array()) return Value::array(std::move(items));
  return Value::string(std::move(text));
}

}  // namespace gufo::tmpl
