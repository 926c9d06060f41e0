// JSON Schema (drafts 2020-12 and 07, as OpenAI's structured outputs and llama.cpp's users
// write them) compiled to GBNF text, then to a Grammar: the answer can only be JSON that the
// schema accepts. Design, in ten lines:
//  - A schema is a conjunction of keywords, each constraining one JSON type; a schema becomes
//    the union over the types it allows of that type's grammar under its keywords.
//  - allOf is merged keyword by keyword (schema_merge.h); anyOf (and oneOf, when its branches
//    are provably disjoint) is a union, each branch merged with the keywords beside it.
//  - $ref (local, "#..." only) becomes a rule named after its target, so recursion works.
//  - Objects: the members of `properties` in their order (required ones mandatory, the others
//    optional), then any additional members (additionalProperties; absent means any value,
//    as the specification says) whose names differ from the known ones. That member order is
//    the one choice the grammar makes beyond the schema: it is what llama.cpp does.
//  - Unsupported keywords are errors naming the keyword and its JSON pointer; annotations
//    (title, description, ...) and unknown keywords are ignored, as the specification says.
// Strings under `pattern`, `format` or `enum`/`const` use canonical escapes only (gbnf_text.h);
// other strings take every JSON escape, and minLength/maxLength count code points (a
// surrogate pair escape is one). Integers are "n" or "n.0": 1.0 is an integer in JSON Schema;
// "n.00" and an integer in exponent form (1e+52) are refused, stricter than the specification
// (a sampled model given "0"+ drew zeros out to its budget: tests/functional/structured's tally).
// Likewise a time's fraction of a second holds at most 9 digits (schema_formats.h).
// Tested by tests/unit/grammar/json_schema_test.cpp and json_schema_suite_test.cpp.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "core/result.h"
#include "grammar/grammar.h"

namespace gufo::grammar {

// Bounds that keep a hostile schema from taking unbounded time or memory.
struct JsonSchemaLimits {
  int max_depth = 64;               // nesting of subschemas, and $ref expansions in a merge
  int max_repeat = 10'000;          // minItems, maxItems, minLength, maxLength, {m,n} in patterns
  size_t max_gbnf_bytes = 1 << 20;  // the grammar text written
};

// The GBNF text of `schema` (root rule `root`); errors say "<json pointer>: <problem>", e.g.
// "#/properties/tags: 'uniqueItems' is not supported".
Result<std::string> json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaLimits& limits = {});

// json_schema_to_gbnf, parsed: a root with no finite instance (a recursion that never ends)
// is an error here.
Result<Grammar> compile_json_schema(const nlohmann::ordered_json& schema, const JsonSchemaLimits& limits = {});

// How the error of a compiled grammar that does not parse begins: a bug in the compiler, never
// the schema's fault (the fuzz targets look for it). Every other error begins with the schema
// location and says what is wrong there, and may quote the schema's own strings.
inline constexpr std::string_view kJsonSchemaBugPrefix =
    "#: the grammar compiled from this schema does not parse (a bug)";

}  // namespace gufo::grammar
