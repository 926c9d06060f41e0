// Helpers the grammar tests share: a compiled grammar held for matchers (a failed compile is a
// test failure naming it), and whether a whole input matches.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"

namespace gufo::grammar {

inline std::shared_ptr<const Grammar> shared_grammar(Result<Grammar> g, std::string_view source) {
  if (!g.ok()) {
    ADD_FAILURE() << source << ": " << g.error().message;
    return nullptr;
  }
  return std::make_shared<const Grammar>(std::move(g).value());
}

// Whether the whole of `input` is a match.
inline bool matches(const std::shared_ptr<const Grammar>& g, std::string_view input) {
  if (!g) return false;
  Matcher m(g);
  return m.accept(input) && m.can_end();
}

}  // namespace gufo::grammar
