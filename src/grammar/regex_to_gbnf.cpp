// regex_to_gbnf (see regex_to_gbnf.h): recursive descent over the pattern's code points,
// writing GBNF as it goes; the first error stops it.
#include "grammar/regex_to_gbnf.h"

#include <optional>
#include <vector>

#include "grammar/gbnf_text.h"

namespace gufo::grammar {

namespace {

constexpr int kMaxNesting = 32;  // of groups: GBNF allows 128 parentheses, a class adds some

CodePoints digit_set() { return {{'0', '9'}}; }
CodePoints word_set() { return normalized({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
// ECMA-262 WhiteSpace and LineTerminator.
CodePoints space_set() {
  return normalized({{'\t', '\r'},
                     {' ', ' '},
                     {0xA0, 0xA0},
                     {0x1680, 0x1680},
                     {0x2000, 0x200A},
                     {0x2028, 0x2029},
                     {0x202F, 0x202F},
                     {0x205F, 0x205F},
                     {0x3000, 0x3000},
                     {0xFEFF, 0xFEFF}});
}
// '.': anything but a line terminator.
CodePoints dot_set() { return complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}); }

std::vector<uint32_t> decode_utf8(std::string_view text, bool& valid) {
  std::vector<uint32_t> out;
  valid = true;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const int length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || i + static_cast<size_t>(length) > text.size()) {
      valid = false;
      return out;
    }
    uint32_t cp = length == 1 ? c : c & (0x7F >> length);
    for (int k = 1; k < length; ++k)
      cp = (cp << 6) | (static_cast<unsigned char>(text[i + static_cast<size_t>(k)]) & 0x3F);
    out.push_back(cp);
    i += static_cast<size_t>(length);
  }
  return out;
}

class RegexCompiler {
 public:
  RegexCompiler(std::string_view pattern, std::string_view any_char, int max_repeat)
      : pattern_(pattern), any_char_(any_char), max_repeat_(max_repeat) {}

  Result<std::string> run() {
    bool valid = false;
    text_ = decode_utf8(pattern_, valid);
    if (!valid) return Error{"pattern is not valid UTF-8"};
    std::vector<std::string> alternatives;
    do {
      if (!alternatives.empty()) ++pos_;  // the '|'
      alternatives.push_back(top_alternative());
    } while (ok() && peek() == '|');
    if (ok() && !at_end()) fail("unbalanced ')'");
    if (!ok()) return Error{error_};
    return gbnf_alternatives(alternatives);
  }

 private:
  bool ok() const { return error_.empty(); }
  bool at_end() const { return pos_ >= text_.size(); }
  uint32_t peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0; }

  void fail(const std::string& message) {
    if (ok()) error_ = "pattern " + std::string(pattern_) + ": at " + std::to_string(pos_) + ": " + message;
  }

  // A top-level alternative: anchors are allowed at its ends, and an unanchored end matches
  // anything there (ECMA search semantics).
  std::string top_alternative() {
    const bool anchored_start = peek() == '^';
    if (anchored_start) ++pos_;
    std::string body = sequence(0);
    bool anchored_end = false;
    if (ok() && peek() == '$') {
      ++pos_;
      anchored_end = true;
      if (!at_end() && peek() != '|') fail("'$' before the end of the pattern is not supported");
    }
    const std::string any = "( " + std::string(any_char_) + " )*";
    return (anchored_start ? "" : any + " ") + body + (anchored_end ? "" : " " + any);
  }

  std::string alternation(int depth) {
    std::vector<std::string> alternatives;
    do {
      if (!alternatives.empty()) ++pos_;
      alternatives.push_back(sequence(depth));
    } while (ok() && peek() == '|');
    return gbnf_alternatives(alternatives);
  }

  // Atoms with their quantifiers, up to '|', ')', a top-level '$' or the end.
  std::string sequence(int depth) {
    std::string out = "\"\"";  // matches the empty string, so an empty sequence is valid GBNF
    while (ok() && !at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && depth == 0) break;
      std::string item = atom(depth);
      if (!ok()) break;
      item = quantified(item);
      out += " " + item;
    }
    return out;
  }

  std::string quantified(const std::string& item) {
    int min = 1;
    int max = 1;  // -1: no bound
    const uint32_t c = peek();
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : -1;
    } else if (c == '{' && parse_bounds(min, max)) {
    } else {
      return item;
    }
    if (!ok()) return item;
    if (peek() == '?') ++pos_;  // lazy: the same set of strings
    if (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{') {
      fail("a quantifier after a quantifier");
      return item;
    }
    const std::string group = "( " + item + " )";
    if (min == 0 && max == -1) return group + "*";
    if (min == 1 && max == -1) return group + "+";
    if (min == 0 && max == 1) return group + "?";
    return group + "{" + std::to_string(min) + "," + (max == -1 ? "" : std::to_string(max)) + "}";
  }

  // {m}, {m,}, {m,n}; false (position unchanged) when it is not one: then '{' is a literal
  // (ECMA Annex B).
  bool parse_bounds(int& min, int& max) {
    size_t at = pos_ + 1;
    const auto number = [&]() -> std::optional<int64_t> {
      if (at >= text_.size() || text_[at] < '0' || text_[at] > '9') return std::nullopt;
      int64_t n = 0;
      while (at < text_.size() && text_[at] >= '0' && text_[at] <= '9') {
        n = std::min<int64_t>(n * 10 + (text_[at] - '0'), int64_t{1} << 40);
        ++at;
      }
      return n;
    };
    const std::optional<int64_t> low = number();
    if (!low) return false;
    std::optional<int64_t> high = low;
    if (at < text_.size() && text_[at] == ',') {
      ++at;
      high = number();
    }
    if (at >= text_.size() || text_[at] != '}') return false;
    pos_ = at + 1;
    if (*low > max_repeat_ || (high && *high > max_repeat_)) {
      fail("a repetition bound above " + std::to_string(max_repeat_));
      return true;
    }
    if (high && *high < *low) {
      fail("a repetition {m,n} with n < m");
      return true;
    }
    min = static_cast<int>(*low);
    max = high ? static_cast<int>(*high) : -1;
    return true;
  }

  std::string chars(const CodePoints& set) {
    std::string text = json_char_in(set);
    if (text.empty()) {
      // An empty class matches nothing: a code point no JSON text can hold there.
      return "[^\\x00-\\U0010FFFF]";
    }
    return text;
  }

  std::string atom(int depth) {
    const uint32_t c = peek();
    switch (c) {
      case '(':
        return group(depth);
      case '[':
        ++pos_;
        return chars(char_class());
      case '.':
        ++pos_;
        return chars(dot_set());
      case '\\': {
        ++pos_;
        const std::optional<CodePoints> set = escape(false);
        return set ? chars(*set) : "";
      }
      case '^':
        fail("'^' after the start of the pattern is not supported");
        return "";
      case '$':
        fail("'$' before the end of the pattern is not supported");
        return "";
      case '*':
      case '+':
      case '?':
        fail("a quantifier with nothing to repeat");
        return "";
      default:
        ++pos_;
        return chars({{c, c}});
    }
  }

  std::string group(int depth) {
    ++pos_;
    if (depth + 1 > kMaxNesting) {
      fail("groups nest deeper than " + std::to_string(kMaxNesting));
      return "";
    }
    if (peek() == '?') {
      if (peek(1) != ':') {
        fail(peek(1) == '=' || peek(1) == '!' ? "lookahead is not supported"
             : peek(1) == '<'                 ? "lookbehind and named groups are not supported"
                                              : "this group syntax is not supported");
        return "";
      }
      pos_ += 2;
    }
    std::string inner = alternation(depth + 1);
    if (ok() && peek() != ')') fail("unclosed '('");
    ++pos_;
    return inner;
  }

  // After a backslash. `in_class`: \b is a backspace there, a word boundary outside.
  std::optional<CodePoints> escape(bool in_class) {
    if (at_end()) {
      fail("a pattern ending in '\\'");
      return std::nullopt;
    }
    const uint32_t e = peek();
    ++pos_;
    switch (e) {
      case 'd':
        return digit_set();
      case 'D':
        return complement(digit_set());
      case 'w':
        return word_set();
      case 'W':
        return complement(word_set());
      case 's':
        return space_set();
      case 'S':
        return complement(space_set());
      case 't':
        return CodePoints{{'\t', '\t'}};
      case 'n':
        return CodePoints{{'\n', '\n'}};
      case 'r':
        return CodePoints{{'\r', '\r'}};
      case 'f':
        return CodePoints{{'\f', '\f'}};
      case 'v':
        return CodePoints{{'\v', '\v'}};
      case '0':
        if (peek() >= '0' && peek() <= '9') break;
        return CodePoints{{0, 0}};
      case 'x':
        return hex_escape(2);
      case 'u':
        return hex_escape(4);
      case 'b':
        if (in_class) return CodePoints{{'\b', '\b'}};
        break;
      default:
        if (e < 0x80 && !((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9'))) {
          return CodePoints{{e, e}};  // escaped punctuation stands for itself
        }
    }
    pos_ -= 1;
    fail(std::string("the escape '\\") + static_cast<char>(e < 0x80 ? e : '?') + "' is not supported" +
         (e >= '1' && e <= '9'   ? " (backreference)"
          : e == 'b' || e == 'B' ? " (word boundary)"
                                 : ""));
    return std::nullopt;
  }

  std::optional<CodePoints> hex_escape(int digits) {
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      const int v = hex_value(peek());
      if (v < 0) {
        fail("expected " + std::to_string(digits) + " hex digits");
        return std::nullopt;
      }
      cp = cp * 16 + static_cast<uint32_t>(v);
      ++pos_;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      fail("a surrogate escape is not supported");
      return std::nullopt;
    }
    return CodePoints{{cp, cp}};
  }

  // After '['.
  CodePoints char_class() {
    const bool negated = peek() == '^';
    if (negated) ++pos_;
    CodePoints set;
    while (ok() && peek() != ']') {
      if (at_end()) {
        fail("unterminated character class");
        return {};
      }
      std::optional<CodePoints> lo = class_atom();
      if (!lo) return {};
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size() && lo->size() == 1 &&
          lo->front().first == lo->front().second) {
        ++pos_;
        const std::optional<CodePoints> hi = class_atom();
        if (!hi) return {};
        if (hi->size() != 1 || hi->front().first != hi->front().second || hi->front().first < lo->front().first) {
          fail("a bad range in a character class");
          return {};
        }
        set.emplace_back(lo->front().first, hi->front().first);
      } else {
        set.insert(set.end(), lo->begin(), lo->end());
      }
    }
    ++pos_;
    set = normalized(set);
    return negated ? complement(set) : set;
  }

  std::optional<CodePoints> class_atom() {
    const uint32_t c = peek();
    ++pos_;
    if (c == '\\') return escape(true);
    return CodePoints{{c, c}};
  }

  std::string_view pattern_;
  std::string_view any_char_;
  int max_repeat_;
  std::vector<uint32_t> text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

Result<std::string> regex_to_gbnf(std::string_view pattern, std::string_view any_char, int max_repeat) {
  return RegexCompiler(pattern, any_char, max_repeat).run();
}

}  // namespace gufo::grammar
