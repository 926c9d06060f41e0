// JSON types as a bit set, for json_schema.cpp: which types a schema allows ("type", with
// integer inside number), which type a keyword constrains, and whether the branches of a
// oneOf are disjoint (so that "exactly one" is "any one"). Tested through
// tests/unit/grammar/json_schema_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/schema_merge.h"

namespace gufo::grammar {

using TypeSet = uint8_t;
inline constexpr TypeSet kNull = 1;
inline constexpr TypeSet kBoolean = 2;
inline constexpr TypeSet kObject = 4;
inline constexpr TypeSet kArray = 8;
inline constexpr TypeSet kString = 16;
inline constexpr TypeSet kInteger = 32;   // numbers with an integral value (1 and 1.0)
inline constexpr TypeSet kFraction = 64;  // the other numbers
inline constexpr TypeSet kAnyType = 127;

// The types a value is of.
TypeSet type_of(const ordered_json& value);
// The types `keyword` says something about (kAnyType for those about every type).
TypeSet keyword_types(std::string_view keyword);
// What the schema's "type" allows (all types without one).
Result<TypeSet> declared_types(const ordered_json& schema, const std::string& path);

// OK when no value can match two of `branches` (schemas, already merged with what was beside
// the oneOf): their types are disjoint, or two objects differ in the constant of a property
// that both require. Otherwise an error naming `path`'s oneOf.
Status check_disjoint(const ordered_json& root, const std::vector<ordered_json>& branches, const std::string& path,
                      int depth_left);

}  // namespace gufo::grammar
