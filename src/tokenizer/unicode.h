// Unicode helpers for the tokenizer: UTF-8 decoding that never fails (bad bytes become
// U+FFFD of length 1), the character classes the pre-tokenizer regexes use (via ICU), and
// GPT-2's byte <-> printable-codepoint mapping. Tested by tests/unit/tokenizer/*_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gufo::tokenizer {

// One decoded codepoint and how many bytes of the input it took.
struct DecodedChar {
  char32_t cp = 0;
  uint32_t n_bytes = 1;
};

// Decodes the codepoint at `pos` (< text.size()). Invalid or truncated sequences decode as
// U+FFFD taking one byte, so a scan always advances.
DecodedChar decode_utf8(std::string_view text, size_t pos);
void append_utf8(std::string& out, char32_t cp);

// Regex classes: \p{L}, \p{N} and \s (the White_Space property, as Rust's regex and
// Oniguruma, which Hugging Face tokenizers use, define it).
bool is_letter(char32_t cp);
bool is_number(char32_t cp);
bool is_space(char32_t cp);

// Unicode NFC of `text` (ICU). Text that is not valid UTF-8 is returned unchanged: NFC is
// defined on codepoints, and the bytes must still reach the byte-level BPE as they are.
std::string nfc(std::string_view text);

// GPT-2 byte-level BPE: each byte maps to one printable codepoint (bytes_to_unicode()).
char32_t byte_to_codepoint(uint8_t byte);
std::optional<uint8_t> codepoint_to_byte(char32_t cp);
// Maps every byte of `bytes` and returns the UTF-8 of the mapped codepoints.
std::string bytes_to_mapped(std::string_view bytes);

// Length of a complete UTF-8 prefix of `bytes` that leaves off only a trailing sequence that
// is still incomplete (a streaming decoder must hold that back until more bytes arrive).
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace gufo::tokenizer
