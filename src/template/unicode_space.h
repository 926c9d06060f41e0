// Unicode whitespace as JavaScript's String.prototype.trim and @huggingface/jinja's
// isWhitespace see it (ASCII \t\n\v\f\r and space, U+00A0, U+1680, U+2000..U+200A, U+2028,
// U+2029, U+202F, U+205F, U+3000, U+FEFF), over UTF-8 text: trim, strip, split(), and {%- -%}.
// Tested through tests/unit/template/template_test.cpp (WhitespaceControl, UnicodeTrim).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gufo::tmpl {

inline bool is_unicode_space(uint32_t cp) {
  if (cp <= 32) return cp == 32 || (cp >= 9 && cp <= 13);
  return cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000 || cp == 0xFEFF;
}

// The byte length of the whitespace code point that starts at text[i], or 0.
inline size_t space_length_at(const std::string& text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  if (i >= text.size()) return 0;
  const unsigned char c = byte(i);
  if (c < 0x80) return is_unicode_space(c) ? 1 : 0;
  if ((c >> 5) == 0x6 && i + 1 < text.size()) {
    const uint32_t cp = ((c & 0x1Fu) << 6) | (byte(i + 1) & 0x3Fu);
    return (byte(i + 1) & 0xC0) == 0x80 && is_unicode_space(cp) ? 2 : 0;
  }
  if ((c >> 4) == 0xE && i + 2 < text.size()) {
    if ((byte(i + 1) & 0xC0) != 0x80 || (byte(i + 2) & 0xC0) != 0x80) return 0;
    const uint32_t cp = ((c & 0x0Fu) << 12) | ((byte(i + 1) & 0x3Fu) << 6) | (byte(i + 2) & 0x3Fu);
    return is_unicode_space(cp) ? 3 : 0;
  }
  return 0;
}

// The byte length of the whitespace code point that ends just before text[end], or 0.
inline size_t space_length_before(const std::string& text, size_t end) {
  for (size_t len = 1; len <= 3 && len <= end; ++len) {
    if (space_length_at(text, end - len) == len) return len;
  }
  return 0;
}

inline size_t skip_spaces_forward(const std::string& text, size_t begin, size_t end) {
  while (begin < end) {
    const size_t len = space_length_at(text, begin);
    if (len == 0 || begin + len > end) break;
    begin += len;
  }
  return begin;
}

inline size_t skip_spaces_backward(const std::string& text, size_t begin, size_t end) {
  while (end > begin) {
    const size_t len = space_length_before(text, end);
    if (len == 0 || end - len < begin) break;
    end -= len;
  }
  return end;
}

}  // namespace gufo::tmpl
