// The grammar that makes a chat answer's tool calls valid by construction: each call in the
// syntax tool_calls.cpp parses and the model's template renders (the request's tool_syntax),
//   <tool_call>\n{"name": "get_weather", "arguments": {...}}\n</tool_call>    (Hermes, Qwen)
// (several separated by "\n" when parallel calls are allowed), or
//   {"name": "get_weather", "parameters": {...}}                              (Llama 3, one call)
// whose name is a callable tool
// and whose arguments match that tool's `parameters` JSON Schema (each compiled once through
// the grammar cache and linked, grammar/link.h). Three forms, by tool_choice:
//  - Calls (required, named): the answer is the calls;
//  - AfterText (auto): free text, and from the first call opening on (tool_call_open), the
//    calls (a lazy grammar, grammar/trigger.h). Llama 3's opening is plain JSON: an answer
//    that writes `{"name": ` anywhere becomes a call from there on (its template asks for
//    JSON only when calling);
//  - OrAnswer (auto with response_format, grammar or json_schema): the calls, or an answer
//    under that constraint.
// Thinking stays outside (engine/constraint.h frees a leading <think> block).
// Tested by tests/unit/server/tool_grammar_test.cpp and tests/functional/agent.test.mjs.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"
#include "server/openai_request.h"

namespace gufo::server {

// A tool's `parameters` as the schema its arguments are constrained to (null: none given,
// that is no arguments: "{}"). Arguments are a JSON object, so a schema must allow objects
// (it is narrowed to them); errors say "#/type: ...".
Result<nlohmann::ordered_json> tool_parameters_schema(const nlohmann::ordered_json* parameters);

enum class ToolCallForm : uint8_t { Calls, AfterText, OrAnswer };

// The text a tool grammar is cached under (grammar_cache.h, GrammarSyntax::ToolCalls): the
// form, the call syntax, the parallel flag, the callable tools with their schemas and, for
// OrAnswer, the request's own constraint.
std::string tool_grammar_key(ToolCallForm form, const CompletionRequest& request);
// What compiled_grammar does with such a key.
Result<grammar::Grammar> compile_tool_grammar(const std::string& key);

// A request's tool-call constraint: `answer` is what the engine applies to the answer (it
// replaces the request's own grammar), `calls` the Calls form, against which the answer's
// text from its first "<tool_call>" on is checked before it is returned as tool calls.
struct ToolConstraint {
  std::shared_ptr<const grammar::Grammar> answer;
  std::shared_ptr<const grammar::Grammar> calls;
};
// None when the request offers no callable tools; errors come from the grammar cache.
Result<std::optional<ToolConstraint>> tool_constraint(const CompletionRequest& request);

// Whether `text` (blanks around it aside) is a whole match of `calls`.
bool is_tool_calls(const std::shared_ptr<const grammar::Grammar>& calls, std::string_view text);

}  // namespace gufo::server
