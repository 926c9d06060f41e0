// parse_gbnf and check_grammar (see gbnf.h). A recursive-descent parser over the text; the
// first error is kept with its line and column, and parsing stops there.
#include "grammar/gbnf.h"

#include "grammar/gbnf_text.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gufo::grammar {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr int kUnbounded = -1;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class Parser {
 public:
  Parser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  Result<Grammar> parse() {
    if (text_.size() > limits_.max_bytes) {
      return Error{"grammar: " + std::to_string(text_.size()) + " bytes; at most " + std::to_string(limits_.max_bytes)};
    }
    skip_space(true);
    while (ok() && pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    if (!ok()) return Error{error_};
    for (const auto& [name, id] : rule_ids_) {
      if (!defined_[id]) return Error{location(used_at_[id]) + ": rule '" + name + "' is used but never defined"};
    }
    const auto root = rule_ids_.find("root");
    if (root == rule_ids_.end()) return Error{"grammar: no 'root' rule (the grammar starts there)"};
    grammar_.root = root->second;
    GUFO_RETURN_IF_ERROR(check_grammar(grammar_));
    return std::move(grammar_);
  }

 private:
  bool ok() const { return error_.empty(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }
  bool at_end() const { return pos_ >= text_.size(); }

  std::string location(size_t at) const {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "grammar:" + std::to_string(line) + ":" + std::to_string(column);
  }

  void fail(const std::string& message) {
    if (ok()) error_ = location(pos_) + ": " + message;
  }

  // Blanks and comments; newlines too where a rule may go on.
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // The rule named `name`, first named at `at`.
  uint32_t rule_id(const std::string& name, size_t at) {
    const auto [it, added] = rule_ids_.try_emplace(name, static_cast<uint32_t>(grammar_.rules.size()));
    if (added) {
      grammar_.rules.push_back(Rule{.name = name, .alternatives = {}});
      defined_.push_back(false);
      used_at_.push_back(at);
    }
    return it->second;
  }

  uint32_t new_rule(const std::string& base) {
    const uint32_t id = static_cast<uint32_t>(grammar_.rules.size());
    grammar_.rules.push_back(Rule{.name = base + "-" + std::to_string(id), .alternatives = {}});
    defined_.push_back(true);
    used_at_.push_back(pos_);
    return id;
  }

  Symbol chars(CharSet set) {
    set.normalize();
    count_symbols(set.ranges.size());  // a class costs by its ranges
    grammar_.char_sets.push_back(std::move(set));
    return Symbol{.kind = Symbol::Kind::Chars, .index = static_cast<uint32_t>(grammar_.char_sets.size() - 1)};
  }

  // One code point of a literal: one set per distinct code point, shared.
  Symbol literal_char(uint32_t code_point) {
    const auto [it, added] = literal_sets_.try_emplace(code_point, 0);
    if (added) it->second = chars(CharSet{.ranges = {{code_point, code_point}}, .negated = false}).index;
    return Symbol{.kind = Symbol::Kind::Chars, .index = it->second};
  }

  void count_symbols(size_t n) {
    n_symbols_ += n;
    if (n_symbols_ > limits_.max_symbols)
      fail("the grammar grows past " + std::to_string(limits_.max_symbols) + " symbols");
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    if (name.empty()) return fail("expected a rule name");
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") return fail("expected '::=' after '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t id = rule_id(name, start);
    if (defined_[id]) {
      pos_ = start;
      return fail("rule '" + name + "' is defined twice");
    }
    defined_[id] = true;
    std::vector<Sequence> alternatives = parse_alternates(name, false);
    grammar_.rules[id].alternatives = std::move(alternatives);
    skip_space(false);
    if (ok() && !at_end() && peek() != '\n' && peek() != '\r') fail("expected the end of the line");
  }

  std::vector<Sequence> parse_alternates(const std::string& rule_name, bool nested) {
    std::vector<Sequence> out;
    out.push_back(parse_sequence(rule_name, nested));
    while (ok() && peek() == '|') {
      ++pos_;
      skip_space(true);
      out.push_back(parse_sequence(rule_name, nested));
    }
    return out;
  }

  Sequence parse_sequence(const std::string& rule_name, bool nested) {
    Sequence seq;
    size_t last_start = 0;  // where the item a repetition applies to begins
    bool have_item = false;
    while (ok() && !at_end()) {
      const char c = peek();
      const size_t item_start = seq.size();
      if (c == '"') {
        ++pos_;
        while (ok() && peek() != '"') {
          if (at_end()) {
            fail("unterminated string literal");
            return seq;
          }
          const std::optional<uint32_t> cp = parse_char();
          if (cp) seq.push_back(literal_char(*cp));
        }
        ++pos_;
        count_symbols(seq.size() - item_start);
      } else if (c == '[') {
        ++pos_;
        seq.push_back(chars(parse_class()));
        count_symbols(1);
      } else if (c == '.') {
        ++pos_;
        seq.push_back(chars(CharSet{.ranges = {}, .negated = true}));
        count_symbols(1);
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        const std::string name = parse_name();
        seq.push_back(Symbol{.kind = Symbol::Kind::Rule, .index = rule_id(name, at)});
        count_symbols(1);
      } else if (c == '(') {
        if (++depth_ > limits_.max_nesting) {
          fail("parentheses nest deeper than " + std::to_string(limits_.max_nesting));
          return seq;
        }
        ++pos_;
        skip_space(true);
        const uint32_t group = new_rule(rule_name);
        std::vector<Sequence> alternatives = parse_alternates(rule_name, true);
        grammar_.rules[group].alternatives = std::move(alternatives);
        if (ok() && peek() != ')') {
          fail("expected ')'");
          return seq;
        }
        ++pos_;
        --depth_;
        seq.push_back(Symbol{.kind = Symbol::Kind::Rule, .index = group});
        count_symbols(1);
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!have_item) {
          fail(std::string("'") + c + "' repeats nothing");
          return seq;
        }
        ++pos_;
        int min = 0;
        int max = kUnbounded;
        if (c == '+') min = 1;
        if (c == '?') max = 1;
        if (c == '{' && !parse_bounds(min, max)) return seq;
        repeat(seq, last_start, min, max, rule_name);
        have_item = false;  // "x**" is an error, as in llama.cpp
        skip_space(nested);
        continue;
      } else {
        break;
      }
      last_start = item_start;
      have_item = true;
      skip_space(nested);
    }
    return seq;
  }

  // {m}, {m,}, {m,n}, {,n} after the '{'.
  bool parse_bounds(int& min, int& max) {
    const auto number = [&]() -> std::optional<int> {
      if (!(peek() >= '0' && peek() <= '9')) return std::nullopt;
      int64_t n = 0;
      while (peek() >= '0' && peek() <= '9') {
        n = n * 10 + (peek() - '0');
        if (n > limits_.max_repeat) {
          fail("a repetition bound above " + std::to_string(limits_.max_repeat));
          return std::nullopt;
        }
        ++pos_;
      }
      return static_cast<int>(n);
    };
    skip_space(false);
    const std::optional<int> low = number();
    if (!ok()) return false;
    skip_space(false);
    if (peek() == '}') {
      if (!low) {
        fail("expected a number in {}");
        return false;
      }
      ++pos_;
      min = max = *low;
      return true;
    }
    if (peek() != ',') {
      fail("expected ',' or '}' in a repetition");
      return false;
    }
    ++pos_;
    skip_space(false);
    const std::optional<int> high = number();
    if (!ok()) return false;
    skip_space(false);
    if (peek() != '}') {
      fail("expected '}'");
      return false;
    }
    ++pos_;
    min = low.value_or(0);
    max = high.value_or(kUnbounded);
    if (max != kUnbounded && max < min) {
      fail("a repetition {m,n} with n < m");
      return false;
    }
    return true;
  }

  // Rewrites seq[start..] (one item) repeated min..max times (max: kUnbounded for "no
  // bound") into plain symbols and new rules: x{2,4} is x x (x (x)?)?, x* is R ::= x R | ε.
  void repeat(Sequence& seq, size_t start, int min, int max, const std::string& rule_name) {
    Sequence item(seq.begin() + static_cast<std::ptrdiff_t>(start), seq.end());
    seq.resize(start);
    if (item.empty()) return;  // ""* matches what "" does: nothing
    Symbol one = item.front();
    if (item.size() > 1) {
      const uint32_t wrapped = new_rule(rule_name);
      grammar_.rules[wrapped].alternatives = {item};
      one = Symbol{.kind = Symbol::Kind::Rule, .index = wrapped};
    }
    count_symbols(static_cast<size_t>(min) + (max == kUnbounded ? 2 : static_cast<size_t>(max - min) * 2));
    if (!ok()) return;
    for (int i = 0; i < min; ++i) seq.push_back(one);
    if (max == kUnbounded) {
      const uint32_t star = new_rule(rule_name);
      grammar_.rules[star].alternatives = {{one, Symbol{.kind = Symbol::Kind::Rule, .index = star}}, {}};
      seq.push_back(Symbol{.kind = Symbol::Kind::Rule, .index = star});
      return;
    }
    std::optional<Symbol> tail;  // the optional rest, built from the inside out
    for (int i = 0; i < max - min; ++i) {
      const uint32_t optional = new_rule(rule_name);
      Sequence more = {one};
      if (tail) more.push_back(*tail);
      grammar_.rules[optional].alternatives = {more, {}};
      tail = Symbol{.kind = Symbol::Kind::Rule, .index = optional};
    }
    if (tail) seq.push_back(*tail);
  }

  CharSet parse_class() {
    CharSet set;
    if (peek() == '^') {
      set.negated = true;
      ++pos_;
    }
    while (ok() && peek() != ']') {
      if (at_end()) {
        fail("unterminated character class");
        return set;
      }
      const std::optional<uint32_t> lo = parse_char();
      if (!lo) return set;
      uint32_t hi = *lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        const std::optional<uint32_t> end = parse_char();
        if (!end) return set;
        if (*end < *lo) {
          fail("a character range whose end is below its start");
          return set;
        }
        hi = *end;
      }
      set.ranges.emplace_back(*lo, hi);
    }
    ++pos_;
    return set;
  }

  // One code point of a literal or a class: an escape or a UTF-8 sequence.
  std::optional<uint32_t> parse_char() {
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c == '\\') {
      ++pos_;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'x':
          return parse_hex(2);
        case 'u':
          return parse_hex(4);
        case 'U':
          return parse_hex(8);
        case 't':
          return '\t';
        case 'n':
          return '\n';
        case 'r':
          return '\r';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
          return static_cast<uint32_t>(e);
        default:
          pos_ -= 2;  // point at the backslash
          fail(std::string("unknown escape '\\") + (e == '\0' ? std::string("") : std::string(1, e)) + "'");
          return std::nullopt;
      }
    }
    const int length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (length == 0 || pos_ + static_cast<size_t>(length) > text_.size()) {
      fail("invalid UTF-8");
      return std::nullopt;
    }
    uint32_t cp = length == 1 ? c : c & (0x7F >> length);
    for (int i = 1; i < length; ++i) {
      const unsigned char next = static_cast<unsigned char>(text_[pos_ + static_cast<size_t>(i)]);
      if ((next & 0xC0) != 0x80) {
        fail("invalid UTF-8");
        return std::nullopt;
      }
      cp = (cp << 6) | (next & 0x3F);
    }
    pos_ += static_cast<size_t>(length);
    return cp;
  }

  std::optional<uint32_t> parse_hex(int digits) {
    uint32_t cp = 0;
    for (int i = 0; i < digits; ++i) {
      const int v = hex_value(static_cast<unsigned char>(peek()));
      if (v < 0) {
        fail("expected " + std::to_string(digits) + " hex digits");
        return std::nullopt;
      }
      cp = cp * 16 + static_cast<uint32_t>(v);
      ++pos_;
    }
    if (cp > kMaxCodePoint) {
      fail("a code point above U+10FFFF");
      return std::nullopt;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      fail("a surrogate (U+D800..U+DFFF) is not a code point UTF-8 can hold");
      return std::nullopt;
    }
    return cp;
  }

  std::string_view text_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  int depth_ = 0;
  size_t n_symbols_ = 0;
  std::string error_;
  Grammar grammar_;
  std::map<std::string, uint32_t> rule_ids_;
  std::vector<bool> defined_;
  std::vector<size_t> used_at_;                // where each rule was first named (an offset: location() is slow)
  std::map<uint32_t, uint32_t> literal_sets_;  // code point -> its set in grammar_.char_sets
};

// The rules with an alternative whose every symbol holds, where a rule symbol holds when its
// rule is in the result and a code-point symbol holds when `chars_hold`: with false, the rules
// that match the empty string; with true, those that match something finite. A worklist
// over the grammar, linear in its size (no pass-until-nothing-changes).
std::vector<bool> rules_where_some_alternative_has_all(const Grammar& g, bool chars_hold) {
  std::vector<bool> result(g.rules.size(), false);
  std::vector<uint32_t> owner;                               // alternative -> its rule
  std::vector<size_t> missing;                               // alternative -> symbols not yet known to hold
  std::vector<std::vector<uint32_t>> users(g.rules.size());  // rule -> alternatives naming it
  std::vector<uint32_t> ready;                               // rules just found to hold
  for (uint32_t r = 0; r < g.rules.size(); ++r) {
    for (const Sequence& seq : g.rules[r].alternatives) {
      const auto alt = static_cast<uint32_t>(owner.size());
      owner.push_back(r);
      size_t count = 0;
      bool dead = false;
      for (const Symbol& s : seq) {
        if (s.kind == Symbol::Kind::Chars) {
          dead = dead || !chars_hold;
        } else {
          ++count;
          users[s.index].push_back(alt);
        }
      }
      missing.push_back(dead ? SIZE_MAX : count);
      if (count == 0 && !dead && !result[r]) {
        result[r] = true;
        ready.push_back(r);
      }
    }
  }
  while (!ready.empty()) {
    const uint32_t r = ready.back();
    ready.pop_back();
    for (const uint32_t alt : users[r]) {
      if (missing[alt] == SIZE_MAX || --missing[alt] != 0) continue;
      if (!result[owner[alt]]) {
        result[owner[alt]] = true;
        ready.push_back(owner[alt]);
      }
    }
  }
  return result;
}

}  // namespace

Result<Grammar> parse_gbnf(std::string_view text, const GbnfLimits& limits) { return Parser(text, limits).parse(); }

Status check_grammar(const Grammar& g) {
  const size_t n = g.rules.size();
  if (g.root >= n) return Error{"grammar: the root rule does not exist"};
  for (const Rule& rule : g.rules) {
    for (const Sequence& seq : rule.alternatives) {
      for (const Symbol& s : seq) {
        if ((s.kind == Symbol::Kind::Rule && s.index >= n) ||
            (s.kind == Symbol::Kind::Chars && s.index >= g.char_sets.size())) {
          return Error{"grammar: rule '" + rule.name + "' refers to a symbol that does not exist"};
        }
      }
    }
  }
  const std::vector<bool> nullable = rules_where_some_alternative_has_all(g, false);
  const std::vector<bool> productive = rules_where_some_alternative_has_all(g, true);
  if (!productive[g.root]) {
    return Error{"grammar: rule '" + g.rules[g.root].name + "' matches nothing finite (it only recurses)"};
  }
  // Left recursion: a rule reachable from itself before any code point is read. Depth-first
  // over the "can start with" edges, with an explicit stack (a chain may be long).
  std::vector<std::vector<uint32_t>> starts(n);
  for (size_t r = 0; r < n; ++r) {
    for (const Sequence& seq : g.rules[r].alternatives) {
      for (const Symbol& s : seq) {
        if (s.kind == Symbol::Kind::Chars) break;
        starts[r].push_back(s.index);
        if (!nullable[s.index]) break;
      }
    }
  }
  std::vector<uint8_t> state(n, 0);  // 0 unseen, 1 on the path, 2 done
  for (size_t first = 0; first < n; ++first) {
    if (state[first] != 0) continue;
    std::vector<std::pair<uint32_t, size_t>> path = {{static_cast<uint32_t>(first), 0}};
    state[first] = 1;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next == starts[rule].size()) {
        state[rule] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t to = starts[rule][next++];
      if (state[to] == 1) {
        return Error{"grammar: rule '" + g.rules[to].name +
                     "' is left-recursive (it can reach itself before reading anything)"};
      }
      if (state[to] == 0) {
        state[to] = 1;
        path.emplace_back(to, 0);
      }
    }
  }
  return {};
}

}  // namespace gufo::grammar
