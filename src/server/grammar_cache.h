// Compiled grammars by their text (GBNF, or a JSON Schema's compact JSON text), so that a
// client sending the same `grammar`, schema or JSON mode with every request compiles it once. Bounded by count and by
// text size: the least recently used goes first. Thread-safe. Tested through tests/functional/structured.test.mjs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "grammar/grammar.h"

namespace gufo::server {

// ToolCalls: a tool_grammar_key (server/tool_grammar.h).
enum class GrammarSyntax : uint8_t { Gbnf, JsonSchema, ToolCalls };

// The grammar of `text`, compiled now or earlier; errors are parse_gbnf's or
// compile_json_schema's (which name the schema's offending part by its JSON pointer), or
// compile_tool_grammar's.
Result<std::shared_ptr<const grammar::Grammar>> compiled_grammar(const std::string& text,
                                                                 GrammarSyntax syntax = GrammarSyntax::Gbnf);

}  // namespace gufo::server
