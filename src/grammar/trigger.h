// A lazy grammar's free part, as GBNF: any text up to a trigger (the text that opens what is
// constrained, such as "<tool_call>"), then the constrained rest. llama.cpp starts a lazy
// grammar when the trigger is seen; here the free text is itself a grammar, a KMP automaton
// over code points that cannot contain the trigger, so that the matcher, the masks and their
// caches work unchanged, and a token that completes the trigger is allowed only if what it
// carries past the trigger fits the constrained rest.
// Tested by tests/unit/grammar/link_test.cpp and tests/unit/engine/constraint_test.cpp.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gufo::grammar {

// GBNF rules `<name>-0` .. `<name>-(n-1)` for a trigger of n code points (ASCII only):
// `<name>-0` matches any text without `trigger`, or such text, then `trigger`, then `then`
// (a rule name). The text may end anywhere before the trigger.
Result<std::string> text_until_trigger_gbnf(std::string_view name, std::string_view trigger, std::string_view then);

}  // namespace gufo::grammar
