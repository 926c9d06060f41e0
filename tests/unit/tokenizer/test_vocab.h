// A tiny byte-level BPE vocab for tests: the 256 byte tokens, a few merges spelling "hello"
// and " h", a control token <|end|> and a user-defined token <think>.
// Used by tests/unit/tokenizer/*_test.cpp.
#pragma once

#include <string>

#include "tokenizer/unicode.h"
#include "tokenizer/vocab.h"

namespace gufo::tokenizer::testing {

inline std::string mapped_byte(int byte) {
  std::string out;
  append_utf8(out, byte_to_codepoint(static_cast<uint8_t>(byte)));
  return out;
}

// Ids: 0..255 bytes (id == byte), then he, ll, hell, hello, "\xC4\xA0h" (space h),
// <|end|> (control), <think> (user-defined).
inline VocabSpec small_vocab_spec() {
  VocabSpec spec;
  for (int b = 0; b < 256; ++b) spec.tokens.push_back(mapped_byte(b));
  spec.types.assign(256, 1);
  const char* extra[] = {"he", "ll", "hell", "hello", "\xC4\xA0h"};
  for (const char* token : extra) {
    spec.tokens.push_back(token);
    spec.types.push_back(1);
  }
  spec.tokens.push_back("<|end|>");
  spec.types.push_back(3);
  spec.tokens.push_back("<think>");
  spec.types.push_back(4);
  spec.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 h"};
  spec.eos_id = 261;
  return spec;
}

inline constexpr int32_t kHe = 256, kLl = 257, kHell = 258, kHello = 259, kSpaceH = 260;
inline constexpr int32_t kEnd = 261, kThink = 262;

}  // namespace gufo::tokenizer::testing
