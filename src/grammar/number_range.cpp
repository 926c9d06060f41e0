// bounded_number_gbnf and digits_in_range (see number_range.h).
#include "grammar/number_range.h"

#include <vector>

#include "grammar/gbnf_text.h"

namespace gufo::grammar {

namespace {

constexpr const char* kAnyFraction = "( \".\" [0-9]+ )?";
// NOTE(zeros): one zero, not "0"+: see json_schema.h.
constexpr const char* kZeroFraction = "( \".\" \"0\" )?";
constexpr const char* kNonzeroFraction = "\".\" \"0\"* [1-9] [0-9]*";

std::string digit_class(char lo, char hi) {
  return lo == hi ? std::string("\"") + lo + "\"" : std::string("[") + lo + "-" + hi + "]";
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : "[0-9]{" + std::to_string(n) + "}";
}

// Digit strings of one length between lo and hi (lo <= hi as strings).
std::string same_length_range(const std::string& lo, const std::string& hi) {
  const size_t n = lo.size();
  if (n == 1) return digit_class(lo[0], hi[0]);
  const std::string lo_rest = lo.substr(1);
  const std::string hi_rest = hi.substr(1);
  if (lo[0] == hi[0]) return "\"" + std::string(1, lo[0]) + "\" " + same_length_range(lo_rest, hi_rest);
  const bool lo_rest_min = lo_rest.find_first_not_of('0') == std::string::npos;
  const bool hi_rest_max = hi_rest.find_first_not_of('9') == std::string::npos;
  std::vector<std::string> alternatives;
  char first_full = lo[0];  // leading digits whose every continuation is in range
  char last_full = hi[0];
  if (!lo_rest_min) {
    alternatives.push_back("\"" + std::string(1, lo[0]) + "\" " + same_length_range(lo_rest, std::string(n - 1, '9')));
    ++first_full;
  }
  if (!hi_rest_max) --last_full;
  if (first_full <= last_full) alternatives.push_back(digit_class(first_full, last_full) + " " + any_digits(n - 1));
  if (!hi_rest_max) {
    alternatives.push_back("\"" + std::string(1, hi[0]) + "\" " + same_length_range(std::string(n - 1, '0'), hi_rest));
  }
  return gbnf_alternatives(alternatives);
}

std::string literal_number(int64_t n) { return "\"" + std::to_string(n) + "\""; }

// The magnitude text I(.F) of a number m >= 0 with lo <= m <= hi, where lo.value >= 0.
std::string magnitude_in(Bound lo, std::optional<Bound> hi, bool integer) {
  const std::string any_fraction = integer ? kZeroFraction : kAnyFraction;
  if (hi && hi->value < lo.value) return "";
  if (hi && hi->value == lo.value) {
    return lo.exclusive || hi->exclusive ? "" : literal_number(lo.value) + " " + kZeroFraction;
  }
  std::vector<std::string> alternatives;
  // The integer part on the lower bound: a fraction above it, or any if the bound is inclusive.
  if (!lo.exclusive) {
    alternatives.push_back(literal_number(lo.value) + " " + any_fraction);
  } else if (!integer) {
    alternatives.push_back(literal_number(lo.value) + " " + kNonzeroFraction);
  }
  // Strictly between the bounds: any fraction keeps it there.
  if (!hi || lo.value + 1 <= hi->value - 1) {
    std::optional<int64_t> top;
    if (hi) top = hi->value - 1;
    alternatives.push_back(digits_in_range(lo.value + 1, top) + " " + any_fraction);
  }
  // On the upper bound: only the bound itself.
  if (hi && !hi->exclusive) alternatives.push_back(literal_number(hi->value) + " " + kZeroFraction);
  return gbnf_alternatives(alternatives);
}

}  // namespace

std::string digits_in_range(int64_t lo, std::optional<int64_t> hi) {
  const std::string lo_text = std::to_string(lo);
  std::vector<std::string> alternatives;
  const size_t last_length = hi ? std::to_string(*hi).size() : lo_text.size();
  for (size_t length = lo_text.size(); length <= last_length; ++length) {
    const std::string from = length == lo_text.size() ? lo_text : "1" + std::string(length - 1, '0');
    const std::string to = hi && length == last_length ? std::to_string(*hi) : std::string(length, '9');
    alternatives.push_back(same_length_range(from, to));
  }
  // No upper bound: every longer number too.
  if (!hi) alternatives.push_back("[1-9] " + any_digits(lo_text.size()) + " [0-9]*");
  return gbnf_alternatives(alternatives);
}

std::string bounded_number_gbnf(std::optional<Bound> lo, std::optional<Bound> hi, bool integer) {
  std::vector<std::string> alternatives;
  // x >= 0: its magnitude between max(lo, 0) and hi.
  if (!hi || hi->value >= 0) {
    const Bound from = lo && lo->value >= 0 ? *lo : Bound{0, false};
    if (std::string m = magnitude_in(from, hi, integer); !m.empty()) alternatives.push_back(m);
  }
  // x <= 0 written with a '-': its magnitude between max(-hi, 0) and -lo.
  if (!lo || lo->value <= 0) {
    const Bound from = hi && hi->value <= 0 ? Bound{-hi->value, hi->exclusive} : Bound{0, false};
    std::optional<Bound> to;
    if (lo) to = Bound{-lo->value, lo->exclusive};
    if (std::string m = magnitude_in(from, to, integer); !m.empty()) alternatives.push_back("\"-\" " + m);
  }
  return gbnf_alternatives(alternatives);
}

}  // namespace gufo::grammar
