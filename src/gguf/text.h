// Text helpers for names and strings that come from untrusted files: UTF-8 validation, and
// quoting that escapes control bytes and bad UTF-8 so a message always stays one clean line.
// Tested by tests/unit/gguf/text_test.cpp.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gufo::gguf {

// True when text is well-formed UTF-8 (no overlongs, no surrogates, nothing past U+10FFFF).
bool is_valid_utf8(std::string_view text);

// True when text holds a byte below 0x20 or the byte 0x7f.
bool has_control_bytes(std::string_view text);

// The length of the longest prefix of text that is at most max_bytes long and does not end
// inside a UTF-8 sequence (so truncating there never produces half a character).
size_t utf8_prefix_bytes(std::string_view text, size_t max_bytes);

// Why `name` cannot be a GGUF key or tensor name, or "" when it can. A name must be
// non-empty, at most max_bytes long, well-formed UTF-8 and free of control characters (the
// spec asks keys to be ASCII; we accept UTF-8 and refuse only what cannot be printed).
std::string name_problem(std::string_view name, size_t max_bytes);

// NOTE(text): names in error messages are cut at 96 bytes: enough for any real tensor name
// (llama.cpp allows 63) while keeping a hostile 64 KiB key from flooding the terminal.
inline constexpr size_t kMaxQuotedNameBytes = 96;

// 'text' for messages: control bytes, quotes, backslashes and invalid UTF-8 bytes become
// escapes (\n, \t, \x1b, ...); longer than max_bytes, it is cut and marked with "...".
std::string quote_name(std::string_view text, size_t max_bytes = kMaxQuotedNameBytes);

// text with the escapes of quote_name but no quotes; "..." marks a cut.
std::string escape_name(std::string_view text, size_t max_bytes = kMaxQuotedNameBytes);

// "text" with JSON-style escapes (\", \\, \n, \u001b) and invalid UTF-8 bytes as \xNN, for
// human-readable listings; cut at max_bytes (on a character boundary) when it is longer,
// in which case *truncated (if given) is set.
std::string quote_string(std::string_view text, size_t max_bytes, bool* truncated = nullptr);

}  // namespace gufo::gguf
