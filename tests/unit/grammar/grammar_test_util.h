// Helpers the grammar tests share: a compiled grammar held for matchers (a failed compile is a
// test failure naming it), whether a whole input matches, and a small vocabulary.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_matcher.h"
#include "grammar/token_set.h"

namespace gufo::grammar {

inline std::shared_ptr<const Grammar> shared_grammar(Result<Grammar> g, std::string_view source) {
  if (!g.ok()) {
    ADD_FAILURE() << source << ": " << g.error().message;
    return nullptr;
  }
  return std::make_shared<const Grammar>(std::move(g).value());
}

// The tokens `tokens` allows next, as allowed[id].
inline std::vector<bool> allowed_bools(TokenMatcher& tokens, const TokenTrie& trie) {
  TokenBits bits;
  tokens.allowed_tokens(bits);
  std::vector<bool> allowed;
  bits_to_bools(bits, trie.n_vocab(), allowed);
  return allowed;
}

// Whether the whole of `input` is a match.
inline bool matches(const std::shared_ptr<const Grammar>& g, std::string_view input) {
  if (!g) return false;
  Matcher m(g);
  return m.accept(input) && m.can_end();
}

// A small vocabulary with the shapes real ones have: single bytes, words, pieces with
// leading spaces, multi-byte UTF-8 whole and split, JSON punctuation fused with quotes; then a
// control token (no bytes) and, last, the end token.
inline std::vector<std::string> small_vocabulary() {
  std::vector<std::string> v;
  for (int b = 0; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
  for (const char* piece : {"{\"", "\":", "\",",      "\"}",   " \"",   "true", "false", "null", "12",  "-3",
                            ".5",  "e+",  "\xC3\xA9", "\xC3",  "\xA9t", "name", " name", "\n  ", "}}",  "[]",
                            "{}",  ", ",  "\\n",      "\\u00", "ab",    "abc",  "a",     "bc",   "x\"", "\"x"}) {
    v.emplace_back(piece);
  }
  v.emplace_back("");  // a control token: never allowed
  v.emplace_back("");  // the end token
  return v;
}

}  // namespace gufo::grammar
