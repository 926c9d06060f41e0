// Compiled grammars by their text, so that a client sending the same `grammar` (or the JSON
// mode's) with every request compiles it once. Bounded by count and by text size: the least
// recently used goes first. Thread-safe. Tested through tests/functional/structured.test.mjs.
#pragma once

#include <memory>
#include <string>

#include "core/result.h"
#include "grammar/grammar.h"

namespace gufo::server {

// The grammar of GBNF `text`, compiled now or earlier; errors are parse_gbnf's.
Result<std::shared_ptr<const grammar::Grammar>> compiled_grammar(const std::string& text);

}  // namespace gufo::server
