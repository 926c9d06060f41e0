// Lexer: preprocessing (as @huggingface/jinja's preprocess()) and tokenization.
// Tested through tests/unit/template/template_test.cpp.
#include "template/lexer.h"

#include <cstring>

#include "template/unicode_space.h"

namespace gufo::tmpl {

namespace {

// Template text with the source line of every byte, so errors name the original line.
struct Source {
  std::string text;
  std::vector<int> line;  // line[i]: the line of text[i]
  int line_at(size_t i) const { return i < line.size() ? line[i] : (line.empty() ? 1 : line.back()); }
  void push(char c, int at) {
    text += c;
    line.push_back(at);
  }
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_word(char c) { return is_word_start(c) || is_digit(c); }

Error error_at(int line, const std::string& message) {
  return Error{"chat template line " + std::to_string(line) + ": " + message};
}

// lstrip_blocks: /^[ \t]*({[#%-])/gm -> "$1"; trim_blocks: /([#%-]})\n/g -> "$1".
Source strip_blocks(const Source& in) {
  Source lstripped;
  const std::string& s = in.text;
  for (size_t i = 0; i < s.size();) {
    const bool line_start = i == 0 || s[i - 1] == '\n' || s[i - 1] == '\r';
    if (line_start) {
      size_t j = i;
      while (j < s.size() && (s[j] == ' ' || s[j] == '\t')) ++j;
      if (j + 1 < s.size() && s[j] == '{' && s[j + 1] != '\0' && std::strchr("#%-", s[j + 1]) != nullptr) {
        i = j;
      }
    }
    lstripped.push(s[i], in.line[i]);
    ++i;
  }
  Source trimmed;
  const std::string& t = lstripped.text;
  for (size_t i = 0; i < t.size();) {
    if (i + 2 < t.size() && t[i] != '\0' && std::strchr("#%-", t[i]) != nullptr && t[i + 1] == '}' &&
        t[i + 2] == '\n') {
      trimmed.push(t[i], lstripped.line[i]);
      trimmed.push(t[i + 1], lstripped.line[i + 1]);
      i += 3;
      continue;
    }
    trimmed.push(t[i], lstripped.line[i]);
    ++i;
  }
  return trimmed;
}

// /{%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/ at `i`: the match length, or 0.
size_t match_generation(const std::string& s, size_t i, bool& lstrip, bool& rstrip, size_t& after_begin) {
  if (s.compare(i, 2, "{%") != 0) return 0;
  size_t j = i + 2;
  lstrip = j < s.size() && s[j] == '-';
  if (lstrip) ++j;
  while (j < s.size() && is_space(s[j])) ++j;
  if (s.compare(j, 3, "end") == 0) j += 3;
  if (s.compare(j, 10, "generation") != 0) return 0;
  j += 10;
  while (j < s.size() && is_space(s[j])) ++j;
  rstrip = j < s.size() && s[j] == '-';
  if (rstrip) ++j;
  if (s.compare(j, 2, "%}") != 0) return 0;
  j += 2;
  after_begin = j;
  while (j < s.size() && is_space(s[j])) ++j;
  return j - i;
}

Source drop_generation_tags(const Source& in) {
  Source out;
  const std::string& s = in.text;
  size_t last = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    bool lstrip = false, rstrip = false;
    size_t after_begin = 0;
    const size_t len = match_generation(s, i, lstrip, rstrip, after_begin);
    if (len == 0) continue;
    size_t end = i;
    while (lstrip && end > last && is_space(s[end - 1])) --end;
    for (size_t k = last; k < end; ++k) out.push(s[k], in.line[k]);
    if (!rstrip) {
      for (size_t k = after_begin; k < i + len; ++k) out.push(s[k], in.line[k]);
    }
    last = i + len;
    i = last - 1;
  }
  for (size_t k = last; k < s.size(); ++k) out.push(s[k], in.line[k]);
  return out;
}

Source preprocess(const std::string& source) {
  Source src;
  int line = 1;
  for (char c : source) {
    src.push(c, line);
    if (c == '\n') ++line;
  }
  if (!src.text.empty() && src.text.back() == '\n') {
    src.text.pop_back();
    src.line.pop_back();
  }
  return drop_generation_tags(strip_blocks(src));
}

class Lexer {
 public:
  explicit Lexer(Source src) : src_(std::move(src)), s_(src_.text) {}

  Result<std::vector<Token>> run() {
    while (pos_ < s_.size()) {
      GUFO_RETURN_IF_ERROR(lex_text());
      if (pos_ >= s_.size()) break;
      GUFO_RETURN_IF_ERROR(lex_tag());
    }
    tokens_.push_back(Token{TokenKind::End, "", src_.line_at(s_.size())});
    return std::move(tokens_);
  }

 private:
  bool at_tag_start(size_t i) const {
    return i + 1 < s_.size() && s_[i] == '{' && (s_[i + 1] == '%' || s_[i + 1] == '{' || s_[i + 1] == '#');
  }

  void add_text(size_t begin, size_t end) {
    if (end > begin) tokens_.push_back(Token{TokenKind::Text, s_.substr(begin, end - begin), src_.line_at(begin)});
  }

  Status lex_text() {
    size_t end = pos_;
    while (end < s_.size() && !at_tag_start(end)) ++end;
    add_text(pos_, end);
    pos_ = end;
    return ok_status();
  }

  // {%- / {{- / {#-: strips the whitespace that ends the previous text.
  void strip_previous_text() {
    if (tokens_.empty() || tokens_.back().kind != TokenKind::Text) return;
    std::string& text = tokens_.back().text;
    text.resize(skip_spaces_backward(text, 0, text.size()));
    if (text.empty()) tokens_.pop_back();
  }

  void skip_spaces() { pos_ = skip_spaces_forward(s_, pos_, s_.size()); }

  Status lex_tag() {
    const int line = src_.line_at(pos_);
    const char kind = s_[pos_ + 1];
    pos_ += 2;
    const bool strip_before = pos_ < s_.size() && s_[pos_] == '-';
    if (strip_before) {
      ++pos_;
      strip_previous_text();
    }
    if (kind == '#') {
      const size_t end = s_.find("#}", pos_);
      if (end == std::string::npos) return error_at(line, "unterminated comment: missing '#}'");
      const bool strip_after = end > pos_ && s_[end - 1] == '-';
      pos_ = end + 2;
      if (strip_after) skip_spaces();
      return ok_status();
    }
    if (kind == '%' && try_raw(line)) return raw_status_;
    tokens_.push_back(Token{kind == '%' ? TokenKind::BlockOpen : TokenKind::VarOpen, "", line});
    return lex_expression(kind == '%');
  }

  // {% raw %}...{% endraw %}: the text in between, verbatim.
  bool try_raw(int line) {
    size_t j = pos_;
    while (j < s_.size() && is_space(s_[j])) ++j;
    if (s_.compare(j, 3, "raw") != 0 || (j + 3 < s_.size() && is_word(s_[j + 3]))) return false;
    j += 3;
    while (j < s_.size() && is_space(s_[j])) ++j;
    bool strip_after = false;
    if (j < s_.size() && s_[j] == '-') {
      strip_after = true;
      ++j;
    }
    if (s_.compare(j, 2, "%}") != 0) return false;
    j += 2;
    if (strip_after) {
      while (j < s_.size() && is_space(s_[j])) ++j;
    }
    // Find {%-? endraw -?%}
    for (size_t k = j; k + 1 < s_.size(); ++k) {
      if (s_[k] != '{' || s_[k + 1] != '%') continue;
      size_t m = k + 2;
      const bool strip_before_end = m < s_.size() && s_[m] == '-';
      if (strip_before_end) ++m;
      while (m < s_.size() && is_space(s_[m])) ++m;
      if (s_.compare(m, 6, "endraw") != 0) continue;
      m += 6;
      while (m < s_.size() && is_space(s_[m])) ++m;
      const bool strip_after_end = m < s_.size() && s_[m] == '-';
      if (strip_after_end) ++m;
      if (s_.compare(m, 2, "%}") != 0) continue;
      std::string body = s_.substr(j, k - j);
      if (strip_before_end) body.resize(skip_spaces_backward(body, 0, body.size()));
      if (!body.empty()) tokens_.push_back(Token{TokenKind::Text, body, src_.line_at(j)});
      pos_ = m + 2;
      if (strip_after_end) skip_spaces();
      raw_status_ = ok_status();
      return true;
    }
    raw_status_ = error_at(line, "unterminated {% raw %}: missing {% endraw %}");
    return true;
  }

  Status lex_expression(bool block) {
    int brace_depth = 0;
    while (true) {
      skip_spaces();
      if (pos_ >= s_.size()) {
        return error_at(src_.line_at(s_.size()), block ? "missing '%}'" : "missing '}}'");
      }
      const int line = src_.line_at(pos_);
      const char c = s_[pos_];
      // Closing: -%} / %} / -}} / }}.
      if (c == '-' && pos_ + 2 < s_.size() && s_[pos_ + 2] == '}' &&
          (s_[pos_ + 1] == '%' || (s_[pos_ + 1] == '}' && brace_depth == 0))) {
        return close(s_[pos_ + 1] == '%', block, line, 3, true);
      }
      if (c == '%' && pos_ + 1 < s_.size() && s_[pos_ + 1] == '}') return close(true, block, line, 2, false);
      if (c == '}' && brace_depth == 0 && pos_ + 1 < s_.size() && s_[pos_ + 1] == '}') {
        return close(false, block, line, 2, false);
      }
      if (c == '\'' || c == '"') {
        GUFO_RETURN_IF_ERROR(lex_string(c, line));
        continue;
      }
      if (is_digit(c)) {
        size_t end = pos_;
        while (end < s_.size() && is_digit(s_[end])) ++end;
        const bool after_dot =
            !tokens_.empty() && tokens_.back().kind == TokenKind::Operator && tokens_.back().text == ".";
        TokenKind kind = TokenKind::Integer;
        if (!after_dot && end + 1 < s_.size() && s_[end] == '.' && is_digit(s_[end + 1])) {
          ++end;
          while (end < s_.size() && is_digit(s_[end])) ++end;
          kind = TokenKind::Float;
        }
        tokens_.push_back(Token{kind, s_.substr(pos_, end - pos_), line});
        pos_ = end;
        continue;
      }
      if (is_word_start(c)) {
        size_t end = pos_;
        while (end < s_.size() && is_word(s_[end])) ++end;
        tokens_.push_back(Token{TokenKind::Name, s_.substr(pos_, end - pos_), line});
        pos_ = end;
        continue;
      }
      static const char* const kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
      bool matched = false;
      for (const char* op : kTwoChar) {
        if (s_.compare(pos_, 2, op) == 0) {
          tokens_.push_back(Token{TokenKind::Operator, op, line});
          pos_ += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (c != '\0' && std::strchr("+-*/%~<>=|.,:()[]{}", c) != nullptr) {
        if (c == '{') ++brace_depth;
        if (c == '}') --brace_depth;
        tokens_.push_back(Token{TokenKind::Operator, std::string(1, c), line});
        ++pos_;
        continue;
      }
      return error_at(line, std::string("unexpected character '") + c + "'");
    }
  }

  Status close(bool percent, bool block, int line, size_t length, bool strip_after) {
    if (percent != block) {
      return error_at(line, block ? "expected '%}' to close the tag, found '}}'"
                                  : "expected '}}' to close the expression, found '%}'");
    }
    tokens_.push_back(Token{block ? TokenKind::BlockClose : TokenKind::VarClose, "", line});
    pos_ += length;
    if (strip_after) skip_spaces();
    return ok_status();
  }

  Status lex_string(char quote, int line) {
    std::string out;
    size_t i = pos_ + 1;
    while (true) {
      if (i >= s_.size()) return error_at(line, "unterminated string literal");
      const char c = s_[i];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        ++i;
        continue;
      }
      if (i + 1 >= s_.size()) return error_at(line, "unterminated string literal");
      const char e = s_[i + 1];
      i += 2;
      switch (e) {
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'v':
          out += '\v';
          break;
        case '\'':
          out += '\'';
          break;
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case 'x':
        case 'u': {
          const size_t n = e == 'x' ? 2 : 4;
          if (i + n > s_.size()) return error_at(line, "bad \\" + std::string(1, e) + " escape");
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = s_[i + k];
            int d = (h >= '0' && h <= '9')   ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
            if (d < 0) return error_at(line, "bad \\" + std::string(1, e) + " escape");
            cp = cp * 16 + static_cast<uint32_t>(d);
          }
          i += n;
          append_utf8(cp, out);
          break;
        }
        default:
          return error_at(line, std::string("unknown escape '\\") + e + "' in string literal");
      }
    }
    tokens_.push_back(Token{TokenKind::String, std::move(out), line});
    pos_ = i + 1;
    return ok_status();
  }

  static void append_utf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  Source src_;
  const std::string& s_;
  size_t pos_ = 0;
  std::vector<Token> tokens_;
  Status raw_status_;
};

}  // namespace

Result<std::vector<Token>> tokenize_template(const std::string& source) {
  if (source.size() > kMaxTemplateBytes) {
    return Error{"chat template: " + std::to_string(source.size()) + " bytes, more than the " +
                 std::to_string(kMaxTemplateBytes) + " allowed"};
  }
  Lexer lexer(preprocess(source));
  return lexer.run();
}

}  // namespace gufo::tmpl
