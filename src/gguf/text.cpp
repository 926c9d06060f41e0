// UTF-8 checks and message-safe quoting (see text.h). UTF-8 rules follow RFC 3629, section 4.
// Tested by tests/unit/gguf/text_test.cpp.
#include "gguf/text.h"

#include <cstdint>
#include <cstdio>

namespace gufo::gguf {
namespace {

// Length of the well-formed UTF-8 sequence starting at text[pos], or 0 if it is ill-formed.
size_t utf8_sequence_bytes(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return 1;
  size_t length = 0;
  // NOTE(text): the second-byte ranges exclude overlong forms (E0, F0), UTF-16 surrogates
  // (ED) and code points past U+10FFFF (F4), per RFC 3629's UTF8-2..UTF8-4 grammar.
  uint8_t second_lo = 0x80;
  uint8_t second_hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) second_lo = 0xA0;
    if (lead == 0xED) second_hi = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) second_lo = 0x90;
    if (lead == 0xF4) second_hi = 0x8F;
  } else {
    return 0;
  }
  if (text.size() - pos < length) return 0;
  if (byte(pos + 1) < second_lo || byte(pos + 1) > second_hi) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(pos + i) < 0x80 || byte(pos + i) > 0xBF) return 0;
  }
  return length;
}

void append_hex_escape(std::string& out, uint8_t value) {
  char buffer[8];
  std::snprintf(buffer, sizeof(buffer), "\\x%02x", value);
  out += buffer;
}

// Appends text[0, max_bytes) with escapes; `quote` is the delimiter that must be escaped.
// Returns true when the text was cut.
bool append_escaped(std::string& out, std::string_view text, size_t max_bytes, char quote, bool json_controls) {
  const size_t limit = utf8_prefix_bytes(text, max_bytes);
  size_t pos = 0;
  while (pos < limit) {
    const auto c = static_cast<uint8_t>(text[pos]);
    const size_t seq = utf8_sequence_bytes(text, pos);
    if (seq == 0 || pos + seq > limit) {
      append_hex_escape(out, c);  // a byte that is not part of well-formed UTF-8
      pos += 1;
      continue;
    }
    if (seq > 1) {
      out.append(text.substr(pos, seq));
      pos += seq;
      continue;
    }
    pos += 1;
    switch (c) {
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      default:
        break;
    }
    if (c == static_cast<uint8_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (c < 0x20 || c == 0x7f) {
      if (json_controls) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        append_hex_escape(out, c);
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return limit < text.size();
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t seq = utf8_sequence_bytes(text, pos);
    if (seq == 0) return false;
    pos += seq;
  }
  return true;
}

bool has_control_bytes(std::string_view text) {
  for (char c : text) {
    const auto byte = static_cast<uint8_t>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

size_t utf8_prefix_bytes(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text.size();
  size_t end = max_bytes;
  // Step back over continuation bytes (10xxxxxx), at most 3, to the start of a character.
  for (int steps = 0; steps < 3 && end > 0; ++steps) {
    if ((static_cast<uint8_t>(text[end]) & 0xC0) != 0x80) break;
    --end;
  }
  return end;
}

std::string name_problem(std::string_view name, size_t max_bytes) {
  if (name.empty()) return "empty name";
  if (name.size() > max_bytes) {
    return "name " + quote_name(name) + " is " + std::to_string(name.size()) + " bytes long (at most " +
           std::to_string(max_bytes) + " allowed)";
  }
  if (!is_valid_utf8(name)) return "name " + quote_name(name) + " is not valid UTF-8";
  if (has_control_bytes(name)) return "name " + quote_name(name) + " contains control characters";
  return "";
}

std::string quote_name(std::string_view text, size_t max_bytes) {
  std::string out = "'";
  const bool cut = append_escaped(out, text, max_bytes, '\'', /*json_controls=*/false);
  out += cut ? "'..." : "'";
  return out;
}

std::string escape_name(std::string_view text, size_t max_bytes) {
  std::string out;
  if (append_escaped(out, text, max_bytes, '\'', /*json_controls=*/false)) out += "...";
  return out;
}

std::string quote_string(std::string_view text, size_t max_bytes, bool* truncated) {
  std::string out = "\"";
  const bool cut = append_escaped(out, text, max_bytes, '"', /*json_controls=*/true);
  out += '"';
  if (truncated != nullptr) *truncated = cut;
  return out;
}

}  // namespace gufo::gguf
