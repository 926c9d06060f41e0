// Whether bytes are UTF-8 as far as they go: what a byte matcher reads as code points when the
// grammar allows any of them (RFC 3629 section 4's well-formed sequences: no overlong form, no
// surrogate, nothing past U+10FFFF), the last code point possibly unfinished.
// Tested by tests/unit/grammar/token_trie_test.cpp (against the byte Matcher).
#pragma once

#include <string_view>

namespace gufo::grammar {

bool is_utf8_prefix(std::string_view bytes);

}  // namespace gufo::grammar
