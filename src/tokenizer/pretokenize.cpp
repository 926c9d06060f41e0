// The qwen2 / llama-bpe split pattern as a scanner; each branch below is one alternative of
// the regex in pretokenize.h, tried in order like the regex engine does.
// Tested by tests/unit/tokenizer/pretokenize_test.cpp and tests/js/tokenizer_parity.test.mjs.
#include "tokenizer/pretokenize.h"

#include "tokenizer/unicode.h"

namespace gufo::tokenizer {

Result<PreTokenizer> pre_tokenizer_from_name(std::string_view name) {
  if (name == "qwen2") return PreTokenizer::Qwen2;
  if (name == "llama-bpe" || name == "llama3") return PreTokenizer::Llama3;
  return Error{"tokenizer.ggml.pre: unsupported pre-tokenizer '" + std::string(name) +
               "' (supported: qwen2, llama-bpe)"};
}

std::string_view pre_tokenizer_name(PreTokenizer pre) { return pre == PreTokenizer::Qwen2 ? "qwen2" : "llama-bpe"; }

namespace {

struct Char {
  char32_t cp;
  size_t offset;  // byte offset in the text
};

bool is_newline(char32_t cp) { return cp == '\r' || cp == '\n'; }
char32_t lower_ascii(char32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

// Length in chars of the match at `i`; never 0 for i < chars.size().
size_t match_at(const std::vector<Char>& chars, size_t i, size_t max_digits) {
  const size_t n = chars.size();
  const auto cp = [&](size_t k) -> char32_t { return k < n ? chars[k].cp : 0; };
  const auto in_range = [&](size_t k) { return k < n; };

  // (?i:'s|'t|'re|'ve|'m|'ll|'d), ASCII case only (as the JS and Rust engines fold these).
  if (cp(i) == '\'' && in_range(i + 1)) {
    const char32_t a = lower_ascii(cp(i + 1));
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (in_range(i + 2)) {
      const char32_t b = lower_ascii(cp(i + 2));
      if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    }
  }
  // [^\r\n\p{L}\p{N}]?\p{L}+
  {
    size_t k = i;
    if (!is_letter(cp(k)) && !is_newline(cp(k)) && !is_number(cp(k)) && in_range(k + 1) && is_letter(cp(k + 1))) {
      ++k;
    }
    if (in_range(k) && is_letter(cp(k))) {
      while (in_range(k) && is_letter(cp(k))) ++k;
      return k - i;
    }
  }
  // \p{N} or \p{N}{1,3}
  if (is_number(cp(i))) {
    size_t k = i;
    while (in_range(k) && k - i < max_digits && is_number(cp(k))) ++k;
    return k - i;
  }
  //  ?[^\s\p{L}\p{N}]+[\r\n]*
  {
    size_t k = i;
    if (cp(k) == ' ') ++k;
    const auto is_other = [&](size_t j) {
      return in_range(j) && !is_space(cp(j)) && !is_letter(cp(j)) && !is_number(cp(j));
    };
    if (is_other(k)) {
      while (is_other(k)) ++k;
      while (in_range(k) && is_newline(cp(k))) ++k;
      return k - i;
    }
  }
  // The remaining alternatives all start with whitespace.
  size_t run_end = i;
  while (in_range(run_end) && is_space(cp(run_end))) ++run_end;
  if (run_end == i) return 1;  // unreachable for the patterns above; keeps the scan moving
  // \s*[\r\n]+ : greedy \s* backs off to the last newline of the whitespace run.
  for (size_t k = run_end; k > i; --k) {
    if (is_newline(cp(k - 1))) return k - i;
  }
  // \s+(?!\S) : the whole run at the end of text, else all but its last char.
  if (run_end == n) return run_end - i;
  if (run_end - i >= 2) return run_end - i - 1;
  // \s+
  return run_end - i;
}

}  // namespace

std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text) {
  std::vector<Char> chars;
  chars.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const DecodedChar decoded = decode_utf8(text, pos);
    chars.push_back({decoded.cp, pos});
    pos += decoded.n_bytes;
  }
  // NOTE(pretok): \p{N}{1,3} in llama-bpe; qwen2 splits every digit.
  const size_t max_digits = pre == PreTokenizer::Llama3 ? 3 : 1;
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < chars.size();) {
    const size_t len = match_at(chars, i, max_digits);
    const size_t begin = chars[i].offset;
    const size_t end = i + len < chars.size() ? chars[i + len].offset : text.size();
    pieces.push_back(text.substr(begin, end - begin));
    i += len;
  }
  return pieces;
}

}  // namespace gufo::tokenizer
