// Type sets of schemas and values (see schema_types.h).
#include "grammar/schema_types.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace gufo::grammar {

namespace {

std::optional<TypeSet> type_named(const std::string& name) {
  if (name == "null") return kNull;
  if (name == "boolean") return kBoolean;
  if (name == "object") return kObject;
  if (name == "array") return kArray;
  if (name == "string") return kString;
  if (name == "integer") return kInteger;
  if (name == "number") return static_cast<TypeSet>(kInteger | kFraction);
  return std::nullopt;
}

// The types a schema's values can have, looking through $ref, allOf, anyOf/oneOf, enum and const.
Result<TypeSet> possible_types(const ordered_json& root, const ordered_json& schema, const std::string& path,
                               int depth_left) {
  GUFO_ASSIGN_OR_RETURN(const ordered_json flat, flatten_schema(root, schema, path, depth_left));
  if (flat.is_boolean()) return flat.get<bool>() ? kAnyType : TypeSet{0};
  GUFO_ASSIGN_OR_RETURN(TypeSet types, declared_types(flat, path));
  for (const char* key : {"anyOf", "oneOf"}) {
    const auto it = flat.find(key);
    if (it == flat.end() || !it->is_array()) continue;
    TypeSet any = 0;
    for (const ordered_json& branch : *it) {
      GUFO_ASSIGN_OR_RETURN(const TypeSet t, possible_types(root, branch, path, depth_left - 1));
      any |= t;
    }
    types &= any;
  }
  for (const char* key : {"enum", "const"}) {
    const auto it = flat.find(key);
    if (it == flat.end()) continue;
    TypeSet values = 0;
    if (key[0] == 'c') {
      values = type_of(*it);
    } else if (it->is_array()) {
      for (const ordered_json& v : *it) values |= type_of(v);
    }
    types &= values;
  }
  return types;
}

// The constants a required property of an object schema is limited to, if it is.
std::optional<std::vector<ordered_json>> tag_values(const ordered_json& schema, const std::string& name) {
  if (!schema.is_object()) return std::nullopt;
  const auto required = schema.find("required");
  if (required == schema.end() || !required->is_array() ||
      std::find(required->begin(), required->end(), name) == required->end()) {
    return std::nullopt;
  }
  const auto properties = schema.find("properties");
  if (properties == schema.end() || !properties->is_object() || !properties->contains(name)) return std::nullopt;
  const ordered_json& property = properties->at(name);
  if (!property.is_object()) return std::nullopt;
  if (const auto c = property.find("const"); c != property.end()) return std::vector<ordered_json>{*c};
  if (const auto e = property.find("enum"); e != property.end() && e->is_array()) {
    return std::vector<ordered_json>(e->begin(), e->end());
  }
  return std::nullopt;
}

// Whether two object schemas require a property whose constants differ.
bool tagged_apart(const ordered_json& a, const ordered_json& b) {
  if (!a.is_object() || !a.contains("properties") || !a.at("properties").is_object()) return false;
  for (const auto& [name, unused] : a.at("properties").items()) {
    const auto in_a = tag_values(a, name);
    const auto in_b = tag_values(b, name);
    if (!in_a || !in_b) continue;
    const bool shared = std::any_of(in_a->begin(), in_a->end(), [&](const ordered_json& v) {
      return std::find(in_b->begin(), in_b->end(), v) != in_b->end();
    });
    if (!shared) return true;
  }
  return false;
}

}  // namespace

TypeSet type_of(const ordered_json& value) {
  switch (value.type()) {
    case ordered_json::value_t::null:
      return kNull;
    case ordered_json::value_t::boolean:
      return kBoolean;
    case ordered_json::value_t::object:
      return kObject;
    case ordered_json::value_t::array:
      return kArray;
    case ordered_json::value_t::string:
      return kString;
    case ordered_json::value_t::number_integer:
    case ordered_json::value_t::number_unsigned:
      return kInteger;
    case ordered_json::value_t::number_float: {
      const double x = value.get<double>();
      return std::isfinite(x) && std::floor(x) == x ? kInteger : kFraction;
    }
    default:
      return 0;
  }
}

TypeSet keyword_types(std::string_view keyword) {
  for (const std::string_view k : {"minLength", "maxLength", "pattern", "format"}) {
    if (keyword == k) return kString;
  }
  for (const std::string_view k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
    if (keyword == k) return static_cast<TypeSet>(kInteger | kFraction);
  }
  for (const std::string_view k : {"items", "prefixItems", "additionalItems", "minItems", "maxItems"}) {
    if (keyword == k) return kArray;
  }
  for (const std::string_view k : {"properties", "required", "additionalProperties"}) {
    if (keyword == k) return kObject;
  }
  return kAnyType;
}

Result<TypeSet> declared_types(const ordered_json& schema, const std::string& path) {
  const auto it = schema.find("type");
  if (it == schema.end()) return kAnyType;
  const std::string at = pointer_child(path, "type");
  std::vector<ordered_json> names;
  if (it->is_array()) {
    names.assign(it->begin(), it->end());
  } else {
    names.push_back(*it);
  }
  TypeSet out = 0;
  for (const ordered_json& name : names) {
    const std::optional<TypeSet> t = name.is_string() ? type_named(name.get<std::string>()) : std::nullopt;
    if (!t) return Error{at + ": unknown type " + name.dump()};
    out |= *t;
  }
  return out;
}

Status check_disjoint(const ordered_json& root, const std::vector<ordered_json>& branches, const std::string& path,
                      int depth_left) {
  std::vector<TypeSet> types;
  std::vector<ordered_json> flat;
  for (const ordered_json& branch : branches) {
    GUFO_ASSIGN_OR_RETURN(const TypeSet t, possible_types(root, branch, path, depth_left));
    types.push_back(t);
    GUFO_ASSIGN_OR_RETURN(ordered_json f, flatten_schema(root, branch, path, depth_left));
    flat.push_back(std::move(f));
  }
  for (size_t i = 0; i < branches.size(); ++i) {
    for (size_t j = i + 1; j < branches.size(); ++j) {
      const TypeSet both = types[i] & types[j];
      if (both == 0) continue;
      if (both == kObject && tagged_apart(flat[i], flat[j])) continue;
      return Error{pointer_child(path, "oneOf") + ": 'oneOf' whose branches " + std::to_string(i) + " and " +
                   std::to_string(j) +
                   " may match the same value is not supported (branches of different types, or objects with "
                   "different constants in a required property, are; or use anyOf)"};
    }
  }
  return {};
}

}  // namespace gufo::grammar
