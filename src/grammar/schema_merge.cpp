// Keyword tables, $ref resolution and schema merging (see schema_merge.h).
#include "grammar/schema_merge.h"

#include <algorithm>
#include <array>
#include <vector>

namespace gufo::grammar {

namespace {

constexpr std::array<std::string_view, 16> kAnnotations = {
    "title",         "description", "$schema",   "$id",   "$comment",    "examples",         "default",
    "deprecated",    "readOnly",    "writeOnly", "$defs", "definitions", "contentMediaType", "contentEncoding",
    "contentSchema", "$vocabulary"};

constexpr std::array<std::string_view, 22> kApplied = {"type",
                                                       "enum",
                                                       "const",
                                                       "properties",
                                                       "required",
                                                       "additionalProperties",
                                                       "items",
                                                       "prefixItems",
                                                       "additionalItems",
                                                       "anyOf",
                                                       "oneOf",
                                                       "allOf",
                                                       "$ref",
                                                       "minLength",
                                                       "maxLength",
                                                       "pattern",
                                                       "format",
                                                       "minimum",
                                                       "maximum",
                                                       "exclusiveMinimum",
                                                       "exclusiveMaximum",
                                                       "minItems"};

constexpr std::array<std::string_view, 23> kUnsupported = {"not",
                                                           "if",
                                                           "patternProperties",
                                                           "propertyNames",
                                                           "dependentRequired",
                                                           "dependentSchemas",
                                                           "dependencies",
                                                           "multipleOf",
                                                           "contains",
                                                           "minContains",
                                                           "maxContains",
                                                           "minProperties",
                                                           "maxProperties",
                                                           "unevaluatedProperties",
                                                           "unevaluatedItems",
                                                           "$anchor",
                                                           "$dynamicRef",
                                                           "$dynamicAnchor",
                                                           "$recursiveRef",
                                                           "$recursiveAnchor",
                                                           "disallow",
                                                           "extends",
                                                           "divisibleBy"};

template <size_t N>
bool listed(const std::array<std::string_view, N>& list, std::string_view key) {
  return std::find(list.begin(), list.end(), key) != list.end();
}

// Keywords whose values combine by taking the larger (lower bounds) or smaller (upper bounds).
constexpr std::array<std::string_view, 4> kLowerBounds = {"minLength", "minItems", "minimum", "exclusiveMinimum"};
constexpr std::array<std::string_view, 4> kUpperBounds = {"maxLength", "maxItems", "maximum", "exclusiveMaximum"};

std::string percent_decoded(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      const std::string hex(text.substr(i + 1, 2));
      char* end = nullptr;
      const long v = std::strtol(hex.c_str(), &end, 16);
      if (end == hex.c_str() + 2) {
        out += static_cast<char>(v);
        i += 2;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

ordered_json type_intersection(const ordered_json& a, const ordered_json& b) {
  const auto names = [](const ordered_json& t) {
    std::vector<std::string> out;
    if (t.is_string()) out.push_back(t.get<std::string>());
    if (t.is_array()) {
      for (const auto& x : t) {
        if (x.is_string()) out.push_back(x.get<std::string>());
      }
    }
    return out;
  };
  const std::vector<std::string> in_b = names(b);
  const auto allows = [&](const std::string& name) {
    return std::find(in_b.begin(), in_b.end(), name) != in_b.end() ||
           (name == "integer" && std::find(in_b.begin(), in_b.end(), "number") != in_b.end());
  };
  ordered_json out = ordered_json::array();
  for (const std::string& name : names(a)) {
    if (allows(name)) {
      out.push_back(name);
    } else if (name == "number" && std::find(in_b.begin(), in_b.end(), "integer") != in_b.end()) {
      out.push_back("integer");
    }
  }
  return out;
}

Result<ordered_json> merge_objects(const ordered_json& root, const ordered_json& a, const ordered_json& b,
                                   ordered_json& out, const std::string& path, int depth_left) {
  static const ordered_json kTrue = true;
  static const ordered_json kEmpty = ordered_json::object();
  const auto props = [](const ordered_json& s) -> const ordered_json& {
    const auto it = s.find("properties");
    return it != s.end() && it->is_object() ? *it : kEmpty;
  };
  const auto additional = [](const ordered_json& s) -> const ordered_json& {
    const auto it = s.find("additionalProperties");
    return it != s.end() ? *it : kTrue;
  };
  // A name known to one side only is, on the other side, one of its additional members.
  ordered_json properties = ordered_json::object();
  for (const ordered_json* side : {&props(a), &props(b)}) {
    for (const auto& [name, unused] : side->items()) {
      if (properties.contains(name)) continue;
      const ordered_json& in_a = props(a).contains(name) ? props(a).at(name) : additional(a);
      const ordered_json& in_b = props(b).contains(name) ? props(b).at(name) : additional(b);
      GUFO_ASSIGN_OR_RETURN(
          properties[name],
          merge_schemas(root, in_a, in_b, pointer_child(pointer_child(path, "properties"), name), depth_left - 1));
    }
  }
  out.erase("properties");
  if (!properties.empty()) out["properties"] = std::move(properties);
  if (a.contains("additionalProperties") || b.contains("additionalProperties")) {
    GUFO_ASSIGN_OR_RETURN(
        out["additionalProperties"],
        merge_schemas(root, additional(a), additional(b), pointer_child(path, "additionalProperties"), depth_left - 1));
  }
  ordered_json required = ordered_json::array();
  for (const ordered_json* side : {&a, &b}) {
    const auto it = side->find("required");
    if (it == side->end() || !it->is_array()) continue;
    for (const auto& name : *it) {
      if (std::find(required.begin(), required.end(), name) == required.end()) required.push_back(name);
    }
  }
  out.erase("required");
  if (!required.empty()) out["required"] = std::move(required);
  return out;
}

}  // namespace

bool is_annotation(std::string_view keyword) { return listed(kAnnotations, keyword); }

bool is_unsupported(std::string_view keyword, const ordered_json& value) {
  if (keyword == "uniqueItems") return !(value.is_boolean() && !value.get<bool>());  // false asks nothing
  return listed(kUnsupported, keyword);
}

bool is_applied(std::string_view keyword) { return listed(kApplied, keyword) || keyword == "maxItems"; }

std::string pointer_child(const std::string& path, std::string_view member) {
  std::string out = path + "/";
  for (const char c : member) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

Result<const ordered_json*> resolve_ref(const ordered_json& root, const std::string& ref, const std::string& path) {
  if (ref.empty() || ref[0] != '#') {
    return Error{path + ": '$ref' " + ref + " is not a local reference (only \"#...\" ones are supported)"};
  }
  const std::string pointer = percent_decoded(std::string_view(ref).substr(1));
  if (!pointer.empty() && pointer[0] != '/') {
    return Error{path + ": '$ref' " + ref + " names an anchor (only JSON pointers are supported)"};
  }
  const ordered_json* at = &root;
  size_t pos = 1;
  while (pos <= pointer.size() && !pointer.empty()) {
    const size_t end = std::min(pointer.find('/', pos), pointer.size());
    std::string token = pointer.substr(pos, end - pos);
    for (size_t i = 0; i + 1 < token.size(); ++i) {
      if (token[i] == '~' && (token[i + 1] == '0' || token[i + 1] == '1'))
        token.replace(i, 2, token[i + 1] == '0' ? "~" : "/");
    }
    if (at->is_object() && at->contains(token)) {
      at = &at->at(token);
    } else if (at->is_array() && !token.empty() && token.find_first_not_of("0123456789") == std::string::npos &&
               token.size() < 9 && std::stoul(token) < at->size()) {
      at = &at->at(std::stoul(token));
    } else {
      return Error{path + ": '$ref' " + ref + " names nothing in this schema"};
    }
    pos = end + 1;
  }
  if (!at->is_object() && !at->is_boolean())
    return Error{path + ": '$ref' " + ref + " names something that is not a schema"};
  return at;
}

Result<ordered_json> flatten_schema(const ordered_json& root, const ordered_json& schema, const std::string& path,
                                    int depth_left) {
  if (depth_left <= 0) return Error{path + ": schemas nest (or '$ref's chain through 'allOf') too deeply"};
  if (!schema.is_object()) return schema;
  if (const auto ref = schema.find("$ref"); ref != schema.end()) {
    if (!ref->is_string()) return Error{path + ": '$ref' must be a string"};
    for (const auto& [key, unused] : schema.items()) {
      if (key != "$ref" && !is_annotation(key) && (is_applied(key) || is_unsupported(key, schema.at(key)))) {
        return Error{path + ": '" + key + "' beside '$ref' is not supported (draft 7 ignores it, 2020-12 applies it)"};
      }
    }
    GUFO_ASSIGN_OR_RETURN(const ordered_json* target, resolve_ref(root, ref->get<std::string>(), path));
    return flatten_schema(root, *target, ref->get<std::string>(), depth_left - 1);
  }
  const auto all = schema.find("allOf");
  if (all == schema.end()) return schema;
  if (!all->is_array() || all->empty()) return Error{path + ": 'allOf' must be a non-empty array"};
  ordered_json out = schema;
  out.erase("allOf");
  for (size_t i = 0; i < all->size(); ++i) {
    GUFO_ASSIGN_OR_RETURN(out, merge_schemas(root, out, all->at(i),
                                             pointer_child(path, "allOf") + "/" + std::to_string(i), depth_left - 1));
  }
  return out;
}

Result<ordered_json> merge_schemas(const ordered_json& root, const ordered_json& a_in, const ordered_json& b_in,
                                   const std::string& path, int depth_left) {
  GUFO_ASSIGN_OR_RETURN(ordered_json a, flatten_schema(root, a_in, path, depth_left));
  GUFO_ASSIGN_OR_RETURN(ordered_json b, flatten_schema(root, b_in, path, depth_left));
  if (a.is_boolean()) return a.get<bool>() ? b : a;
  if (b.is_boolean()) return b.get<bool>() ? a : b;
  if (!a.is_object() || !b.is_object()) return Error{path + ": a schema must be an object or a boolean"};
  ordered_json out = a;
  bool objects = false;
  for (const auto& [key, value] : b.items()) {
    if (key == "properties" || key == "additionalProperties" || key == "required") {
      objects = true;
      continue;
    }
    if (!out.contains(key) || is_annotation(key) || !is_applied(key)) {
      if (!out.contains(key)) out[key] = value;
      continue;
    }
    ordered_json& mine = out[key];
    if (mine == value) continue;
    if (key == "type") {
      mine = type_intersection(mine, value);
    } else if (listed(kLowerBounds, key) && mine.is_number() && value.is_number()) {
      if (value > mine) mine = value;
    } else if (listed(kUpperBounds, key) && mine.is_number() && value.is_number()) {
      if (value < mine) mine = value;
    } else if (key == "enum" && mine.is_array() && value.is_array()) {
      ordered_json both = ordered_json::array();
      for (const auto& x : mine) {
        if (std::find(value.begin(), value.end(), x) != value.end()) both.push_back(x);
      }
      mine = std::move(both);
    } else if (key == "const") {
      return ordered_json(false);  // two different constants: nothing is both
    } else if (key == "items" && (mine.is_object() || mine.is_boolean()) && (value.is_object() || value.is_boolean())) {
      GUFO_ASSIGN_OR_RETURN(mine, merge_schemas(root, mine, value, pointer_child(path, "items"), depth_left - 1));
    } else {
      return Error{path + ": '" + key + "' in more than one 'allOf' branch, with different values, is not supported"};
    }
  }
  if (objects || a.contains("properties") || a.contains("additionalProperties")) {
    GUFO_RETURN_IF_ERROR(merge_objects(root, a, b, out, path, depth_left));
  }
  return out;
}

}  // namespace gufo::grammar
