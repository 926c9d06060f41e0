// What json_schema.cpp needs besides the walk: which keywords it knows, local $ref
// resolution, and the merge of two schemas into one that accepts what both accept (allOf,
// and an anyOf branch with the keywords beside it). Tested through
// tests/unit/grammar/json_schema_test.cpp.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/result.h"

namespace gufo::grammar {

using nlohmann::ordered_json;

// Keywords that change nothing about which values are valid (title, description, ...).
bool is_annotation(std::string_view keyword);
// Validation keywords the compiler refuses rather than ignore (uniqueItems, not, ...).
bool is_unsupported(std::string_view keyword, const ordered_json& value);
// Keywords the compiler applies.
bool is_applied(std::string_view keyword);

// "#/a/b" escaped for a JSON pointer member name (~0, ~1).
std::string pointer_child(const std::string& path, std::string_view member);

// The schema a local reference ("#", "#/$defs/x", percent-escapes and ~0 ~1 decoded) names.
Result<const ordered_json*> resolve_ref(const ordered_json& root, const std::string& ref, const std::string& path);

// A schema whose instances are those of both `a` and `b` (each an object or a boolean),
// with any $ref or allOf inside `b`'s or `a`'s top level inlined. Errors name `path`.
Result<ordered_json> merge_schemas(const ordered_json& root, const ordered_json& a, const ordered_json& b,
                                   const std::string& path, int depth_left);

// `schema` with its top-level $ref (no siblings) and allOf inlined and merged.
Result<ordered_json> flatten_schema(const ordered_json& root, const ordered_json& schema, const std::string& path,
                                    int depth_left);

}  // namespace gufo::grammar
