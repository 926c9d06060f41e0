// UTF-8, character classes (ICU) and the GPT-2 byte mapping. See unicode.h.
// Tested by tests/unit/tokenizer/tokenizer_test.cpp.
#include "tokenizer/unicode.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/ustring.h>

#include <array>
#include <vector>

namespace gufo::tokenizer {

DecodedChar decode_utf8(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  if (lead < 0x80) return {lead, 1};
  uint32_t n_bytes = 0;
  char32_t cp = 0;
  char32_t min_cp = 0;
  if ((lead & 0xE0) == 0xC0) {
    n_bytes = 2, cp = lead & 0x1F, min_cp = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    n_bytes = 3, cp = lead & 0x0F, min_cp = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    n_bytes = 4, cp = lead & 0x07, min_cp = 0x10000;
  } else {
    return {0xFFFD, 1};
  }
  if (pos + n_bytes > text.size()) return {0xFFFD, 1};
  for (uint32_t i = 1; i < n_bytes; ++i) {
    const uint8_t next = byte(pos + i);
    if ((next & 0xC0) != 0x80) return {0xFFFD, 1};
    cp = (cp << 6) | (next & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not UTF-8.
  if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1};
  return {cp, n_bytes};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_letter(char32_t cp) {
  if (cp < 0x80) return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_L_MASK) != 0;
}

bool is_number(char32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  return (U_GET_GC_MASK(static_cast<UChar32>(cp)) & U_GC_N_MASK) != 0;
}

bool is_space(char32_t cp) {
  if (cp < 0x80) return cp == ' ' || (cp >= '\t' && cp <= '\r');
  return u_hasBinaryProperty(static_cast<UChar32>(cp), UCHAR_WHITE_SPACE) != 0;
}

std::string nfc(std::string_view text) {
  // ASCII is always NFC; most text is, so skip the UTF-16 round trip for it.
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii || text.size() > INT32_MAX / 4) return std::string(text);
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2* normalizer = unorm2_getNFCInstance(&status);
  if (U_FAILURE(status)) return std::string(text);
  int32_t n_utf16 = 0;
  std::vector<UChar> utf16(text.size() + 1);
  u_strFromUTF8(utf16.data(), static_cast<int32_t>(utf16.size()), &n_utf16, text.data(),
                static_cast<int32_t>(text.size()), &status);
  if (U_FAILURE(status)) return std::string(text);  // not valid UTF-8
  if (unorm2_isNormalized(normalizer, utf16.data(), n_utf16, &status) && U_SUCCESS(status)) {
    return std::string(text);
  }
  status = U_ZERO_ERROR;
  // NOTE(nfc): NFC output is at most 3x its input in UTF-16 units (Unicode UAX #15).
  std::vector<UChar> normalized(static_cast<size_t>(n_utf16) * 3 + 1);
  const int32_t n_norm = unorm2_normalize(normalizer, utf16.data(), n_utf16, normalized.data(),
                                          static_cast<int32_t>(normalized.size()), &status);
  if (U_FAILURE(status)) return std::string(text);
  std::string out(static_cast<size_t>(n_norm) * 3 + 1, '\0');
  int32_t n_out = 0;
  u_strToUTF8(out.data(), static_cast<int32_t>(out.size()), &n_out, normalized.data(), n_norm, &status);
  if (U_FAILURE(status)) return std::string(text);
  out.resize(static_cast<size_t>(n_out));
  return out;
}

namespace {

// NOTE(gpt2): bytes_to_unicode() from GPT-2's encoder.py: printable Latin-1 bytes map to
// themselves, the other 68 bytes to U+0100.. in byte order.
struct ByteTables {
  std::array<char32_t, 256> to_cp{};
  std::array<int16_t, 324> from_cp{};  // indexed by codepoint; -1 where no byte maps there
  ByteTables() {
    from_cp.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_cp[b] = printable ? static_cast<char32_t>(b) : next++;
      from_cp[to_cp[b]] = static_cast<int16_t>(b);
    }
  }
};

const ByteTables& byte_tables() {
  static const ByteTables tables;
  return tables;
}

}  // namespace

char32_t byte_to_codepoint(uint8_t byte) { return byte_tables().to_cp[byte]; }

std::optional<uint8_t> codepoint_to_byte(char32_t cp) {
  if (cp >= byte_tables().from_cp.size()) return std::nullopt;
  const int16_t byte = byte_tables().from_cp[cp];
  if (byte < 0) return std::nullopt;
  return static_cast<uint8_t>(byte);
}

std::string bytes_to_mapped(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(c)));
  return out;
}

size_t complete_utf8_prefix(std::string_view bytes) {
  // Look back at most 3 bytes for a lead byte whose sequence runs past the end.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(bytes[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = 1;
    if ((b & 0xE0) == 0xC0)
      need = 2;
    else if ((b & 0xF0) == 0xE0)
      need = 3;
    else if ((b & 0xF8) == 0xF0)
      need = 4;
    return need > back ? n - back : n;
  }
  return n;
}

}  // namespace gufo::tokenizer
