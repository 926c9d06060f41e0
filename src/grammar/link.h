// Grammars put together: a GBNF "glue" text whose named placeholders stand for grammars
// compiled elsewhere (a tool's JSON Schema, a response_format), linked as rule references.
// Linking compiled grammars, not their texts, keeps each part exactly as it was compiled:
// no rule of one part can be taken for a rule of another with the same name.
// Tested by tests/unit/grammar/link_test.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "grammar/gbnf.h"
#include "grammar/grammar.h"

namespace gufo::grammar {

// One part: the rule name the glue uses for it, and the grammar it stands for (its root).
struct LinkedPart {
  std::string name;
  std::shared_ptr<const Grammar> grammar;
};

// `glue` (GBNF text with a `root`) where each part's name, used as a rule but not defined
// there, matches what that part's grammar matches. Errors are parse_gbnf's for the glue.
Result<Grammar> link_grammars(std::string_view glue, const std::vector<LinkedPart>& parts,
                              const GbnfLimits& limits = {});

}  // namespace gufo::grammar
