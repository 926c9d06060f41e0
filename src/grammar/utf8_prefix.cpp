// is_utf8_prefix (see utf8_prefix.h).
#include "grammar/utf8_prefix.h"

#include <cstdint>

namespace gufo::grammar {

namespace {

// The continuation bytes a lead byte needs, and the range its first one must fall in (RFC 3629
// section 4: E0 and F0 exclude overlong forms, ED surrogates, F4 what passes U+10FFFF); -1
// for a byte that cannot start a code point.
struct Lead {
  int due = -1;
  uint8_t first_lo = 0x80;
  uint8_t first_hi = 0xBF;
};

Lead lead_of(uint8_t byte) {
  if (byte < 0x80) return {.due = 0};
  if (byte >= 0xC2 && byte <= 0xDF) return {.due = 1};
  if (byte == 0xE0) return {.due = 2, .first_lo = 0xA0};
  if (byte == 0xED) return {.due = 2, .first_hi = 0x9F};
  if (byte >= 0xE1 && byte <= 0xEF) return {.due = 2};
  if (byte == 0xF0) return {.due = 3, .first_lo = 0x90};
  if (byte == 0xF4) return {.due = 3, .first_hi = 0x8F};
  if (byte >= 0xF1 && byte <= 0xF3) return {.due = 3};
  return {};
}

}  // namespace

bool is_utf8_prefix(std::string_view bytes) {
  size_t i = 0;
  while (i < bytes.size()) {
    const Lead lead = lead_of(static_cast<uint8_t>(bytes[i++]));
    if (lead.due < 0) return false;
    for (int k = 0; k < lead.due && i < bytes.size(); ++k, ++i) {
      const auto byte = static_cast<uint8_t>(bytes[i]);
      const uint8_t lo = k == 0 ? lead.first_lo : uint8_t{0x80};
      const uint8_t hi = k == 0 ? lead.first_hi : uint8_t{0xBF};
      if (byte < lo || byte > hi) return false;
    }
  }
  return true;
}

}  // namespace gufo::grammar
