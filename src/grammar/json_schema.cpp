// json_schema_to_gbnf and compile_json_schema (see json_schema.h): one walk over the schema
// that writes a GBNF rule per construct; each visit returns the GBNF expression of the
// values its schema accepts.
#include "grammar/json_schema.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/gbnf_text.h"
#include "grammar/number_range.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar/schema_formats.h"
#include "grammar/schema_merge.h"
#include "grammar/schema_types.h"

namespace gufo::grammar {

namespace {

// RFC 8259 values with json_gbnf.h's bounded whitespace. A string character is any code
// point raw, or any escape (a surrogate pair escape counts as one character: minLength
// counts code points); lone surrogate escapes are refused (no code point to decode them to).
constexpr std::string_view kPrimitives = R"gbnf(
ws ::= ( " " | "\n" [ \t]{0,20} )?
json-value ::= json-object | json-array | json-string | json-number | "true" | "false" | "null"
json-object ::= "{" ws ( json-member ( "," ws json-member )* )? "}"
json-member ::= json-string ws ":" ws json-value ws
json-array ::= "[" ws ( json-value ws ( "," ws json-value ws )* )? "]"
json-string ::= "\"" json-char* "\""
json-char ::= [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" json-u )
json-u ::= [0-9a-cA-Ce-fE-F] json-hex json-hex json-hex | [dD] [0-7] json-hex json-hex | [dD] [89abAB] json-hex json-hex "\\u" [dD] [c-fC-F] json-hex json-hex
json-hex ::= [0-9a-fA-F]
json-number ::= "-"? json-int ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
json-integer ::= "-"? json-int ( "." "0" )?
json-int ::= "0" | [1-9] [0-9]*
json-never ::= [^\x00-\U0010FFFF]
)gbnf";

constexpr const char* kWs = " ws ";

bool is_count(const ordered_json& v) {
  return v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
}

std::string alternatives_of(const std::vector<std::string>& alternatives) {
  return alternatives.empty() ? "json-never" : gbnf_alternatives(alternatives);
}

// The canonical JSON text of a value (nlohmann's dump: JSON.stringify's escaping).
std::string canonical_text(const ordered_json& v) {
  return v.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

// The units a JSON string's text is made of: one raw code point, or one escape sequence.
std::vector<std::string> text_units(const std::string& quoted) {
  std::vector<std::string> out;
  for (size_t i = 1; i + 1 < quoted.size();) {
    size_t length = 1;
    const auto c = static_cast<unsigned char>(quoted[i]);
    if (c == '\\') {
      length = quoted[i + 1] == 'u' ? 6 : 2;
    } else if (c >= 0x80) {
      length = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    }
    out.push_back(quoted.substr(i, length));
    i += length;
  }
  return out;
}

class SchemaCompiler {
 public:
  SchemaCompiler(const ordered_json& root, const JsonSchemaLimits& limits) : root_(root), limits_(limits) {}

  Result<std::string> run() {
    GUFO_ASSIGN_OR_RETURN(const std::string value, visit(root_, "#", 0));
    return text_around(value);
  }

  // The $ref targets written as rules, with their rule names (after run()).
  const std::map<std::string, std::string>& ref_rules() const { return ref_rules_; }

 private:
  Result<std::string> text_around(const std::string& value) const {
    std::string text = "root ::= [ \\t\\n]{0,4} " + value + "\n" + rules_ + std::string(kPrimitives) +
                       key_char_rules() + std::string(kFormatRules);
    if (text.size() > limits_.max_gbnf_bytes) return too_big();
    return text;
  }

  // A string character in canonical escaping (gbnf_text.h), and its escapes alone.
  static std::string key_char_rules() {
    std::string escapes;
    for (uint32_t cp = 0; cp < 0x80; ++cp) {
      if (cp < 0x20 || cp == '"' || cp == '\\')
        escapes += (escapes.empty() ? "" : " | ") + gbnf_literal(canonical_escape(cp));
    }
    return "json-key-escape ::= " + escapes + "\njson-key-char ::= [^\"\\\\\\x00-\\x1F] | json-key-escape\n";
  }

  Error too_big() const {
    return Error{"#: the grammar for this schema grows past " + std::to_string(limits_.max_gbnf_bytes) + " bytes"};
  }

  // A rule with this body (one per distinct body), by name.
  std::string rule(const std::string& body) {
    if (body.find_first_of(" \"[(") == std::string::npos) return body;  // already one rule's name
    const auto [it, added] = rule_by_body_.try_emplace(body, "");
    if (added) {
      it->second = "s" + std::to_string(next_rule_++);
      rules_ += it->second + " ::= " + body + "\n";
    }
    return it->second;
  }

  Result<std::string> visit(const ordered_json& schema, const std::string& path, int depth) {
    if (depth > limits_.max_depth)
      return Error{path + ": schemas nest deeper than " + std::to_string(limits_.max_depth)};
    if (rules_.size() > limits_.max_gbnf_bytes) return too_big();
    if (schema.is_boolean()) return std::string(schema.get<bool>() ? "json-value" : "json-never");
    if (!schema.is_object())
      return Error{path + ": a schema must be an object or a boolean, not " + canonical_text(schema)};
    for (const auto& [key, value] : schema.items()) {
      if (is_unsupported(key, value)) return Error{path + ": '" + key + "' is not supported"};
      if (key == "$id" && &schema != &root_) {
        return Error{path + ": '$id' in a subschema is not supported (it changes what '$ref' names)"};
      }
    }
    if (schema.contains("$ref")) return visit_ref(schema, path, depth);
    if (schema.contains("allOf")) {
      GUFO_ASSIGN_OR_RETURN(const ordered_json flat, flatten_schema(root_, schema, path, limits_.max_depth - depth));
      return visit(flat, path, depth + 1);
    }
    if (schema.contains("anyOf") || schema.contains("oneOf")) return visit_union(schema, path, depth);
    if (schema.contains("enum") || schema.contains("const")) return visit_literals(schema, path, depth);
    return visit_types(schema, path, depth);
  }

  // A rule per reference target, made once: a recursive schema refers to its own rule.
  Result<std::string> visit_ref(const ordered_json& schema, const std::string& path, int depth) {
    const ordered_json& ref = schema.at("$ref");
    if (!ref.is_string()) return Error{pointer_child(path, "$ref") + ": '$ref' must be a string"};
    for (const auto& [key, value] : schema.items()) {
      if (key != "$ref" && is_applied(key)) {
        return Error{path + ": '" + key + "' beside '$ref' is not supported (draft 7 ignores it, 2020-12 applies it)"};
      }
    }
    const std::string target_path = ref.get<std::string>();
    if (const auto it = ref_rules_.find(target_path); it != ref_rules_.end()) return it->second;
    GUFO_ASSIGN_OR_RETURN(const ordered_json* target, resolve_ref(root_, target_path, path));
    const std::string name = "ref" + std::to_string(ref_rules_.size());
    ref_rules_.emplace(target_path, name);
    GUFO_ASSIGN_OR_RETURN(const std::string body, visit(*target, target_path, depth + 1));
    rules_ += name + " ::= " + body + "\n";
    return name;
  }

  // anyOf: any branch (each merged with the keywords beside it). oneOf: the same, but only
  // when no value can match two branches (else "exactly one" would need a complement).
  Result<std::string> visit_union(const ordered_json& schema, const std::string& path, int depth) {
    if (schema.contains("anyOf") && schema.contains("oneOf")) {
      return Error{path + ": 'anyOf' and 'oneOf' in one schema are not supported together"};
    }
    const std::string key = schema.contains("anyOf") ? "anyOf" : "oneOf";
    const ordered_json& branches = schema.at(key);
    if (!branches.is_array() || branches.empty())
      return Error{pointer_child(path, key) + ": must be a non-empty array"};
    ordered_json rest = schema;
    rest.erase(key);
    bool has_rest = false;
    for (const auto& [k, unused] : rest.items()) has_rest = has_rest || is_applied(k);
    std::vector<std::string> alternatives;
    std::vector<ordered_json> merged;
    for (size_t i = 0; i < branches.size(); ++i) {
      const std::string branch_path = pointer_child(path, key) + "/" + std::to_string(i);
      ordered_json branch = branches[i];
      if (has_rest) {
        GUFO_ASSIGN_OR_RETURN(branch, merge_schemas(root_, rest, branches[i], branch_path, limits_.max_depth - depth));
      }
      GUFO_ASSIGN_OR_RETURN(std::string alternative, visit(branch, branch_path, depth + 1));
      alternatives.push_back(std::move(alternative));
      merged.push_back(std::move(branch));
    }
    if (key == "oneOf") {
      GUFO_RETURN_IF_ERROR(check_disjoint(root_, merged, path, limits_.max_depth - depth));
    }
    return rule(alternatives_of(alternatives));
  }

  Result<std::string> visit_literals(const ordered_json& schema, const std::string& path, int depth) {
    std::vector<ordered_json> values;
    if (const auto it = schema.find("enum"); it != schema.end()) {
      if (!it->is_array()) return Error{pointer_child(path, "enum") + ": must be an array"};
      values.assign(it->begin(), it->end());
    }
    if (const auto it = schema.find("const"); it != schema.end()) {
      if (schema.contains("enum")) {
        std::erase_if(values, [&](const ordered_json& v) { return v != *it; });
      } else {
        values = {*it};
      }
    }
    GUFO_ASSIGN_OR_RETURN(const TypeSet allowed, declared_types(schema, path));
    for (const auto& [key, unused] : schema.items()) {
      if (key == "type" || key == "enum" || key == "const" || !is_applied(key)) continue;
      for (const ordered_json& v : values) {
        if ((type_of(v) & keyword_types(key)) != 0) {
          return Error{path + ": '" + key + "' beside 'enum' or 'const' is not supported"};
        }
      }
    }
    std::vector<std::string> alternatives;
    for (const ordered_json& v : values) {
      if ((type_of(v) & allowed) == 0) continue;
      GUFO_ASSIGN_OR_RETURN(std::string literal, literal_of(v, path, depth));
      alternatives.push_back(std::move(literal));
    }
    return rule(alternatives_of(alternatives));
  }

  // The text of one JSON value, with whitespace where a model may put it.
  Result<std::string> literal_of(const ordered_json& v, const std::string& path, int depth) {
    if (depth > limits_.max_depth)
      return Error{path + ": a constant nests deeper than " + std::to_string(limits_.max_depth)};
    if (v.is_number()) return number_literal(v);
    if (v.is_array() || v.is_object()) {
      std::string out = gbnf_literal(v.is_array() ? "[" : "{") + kWs;
      size_t index = 0;
      for (const auto& [key, item] : v.items()) {
        if (index++ > 0) out += "\",\" ws ";
        if (v.is_object()) out += gbnf_literal(canonical_text(key)) + kWs + "\":\" ws ";
        GUFO_ASSIGN_OR_RETURN(std::string inner, literal_of(item, path, depth + 1));
        out += inner + kWs;
      }
      return rule(out + gbnf_literal(v.is_array() ? "]" : "}"));
    }
    return gbnf_literal(canonical_text(v));
  }

  // A number equals its value however it is written among "n", "n.0" (the forms
  // JSON.stringify and nlohmann write for integral values) and, for 0, "-0"; not "n.00"
  // (json_schema.h says why).
  static std::string number_literal(const ordered_json& v) {
    const double x = v.get<double>();
    if (!v.is_number_float() || (std::floor(x) == x && std::fabs(x) < 1e15)) {
      const std::string digits = v.is_number_float() ? std::to_string(static_cast<int64_t>(x)) : canonical_text(v);
      if (digits == "0" || digits == "-0") return "( \"-\"? \"0\" ( \".\" \"0\" )? )";
      return "( " + gbnf_literal(digits) + " ( \".\" \"0\" )? )";
    }
    return gbnf_literal(canonical_text(v));
  }

  // The union over the types the schema allows of each type's grammar.
  Result<std::string> visit_types(const ordered_json& schema, const std::string& path, int depth) {
    GUFO_ASSIGN_OR_RETURN(const TypeSet allowed, declared_types(schema, path));
    bool constrained = schema.contains("type");
    for (const auto& [key, unused] : schema.items()) constrained = constrained || is_applied(key);
    if (!constrained) return std::string("json-value");
    std::vector<std::string> alternatives;
    if (allowed & kNull) alternatives.emplace_back("\"null\"");
    if (allowed & kBoolean) alternatives.emplace_back("( \"true\" | \"false\" )");
    if (allowed & kObject) {
      GUFO_ASSIGN_OR_RETURN(std::string object, visit_object(schema, path, depth));
      alternatives.push_back(std::move(object));
    }
    if (allowed & kArray) {
      GUFO_ASSIGN_OR_RETURN(std::string array, visit_array(schema, path, depth));
      alternatives.push_back(std::move(array));
    }
    if (allowed & kString) {
      GUFO_ASSIGN_OR_RETURN(std::string string, visit_string(schema, path));
      alternatives.push_back(std::move(string));
    }
    if (allowed & (kInteger | kFraction)) {
      GUFO_ASSIGN_OR_RETURN(std::string number, visit_number(schema, path, (allowed & kFraction) == 0));
      alternatives.push_back(std::move(number));
    }
    return rule(alternatives_of(alternatives));
  }

  Result<std::optional<int64_t>> count(const ordered_json& schema, const std::string& key, const std::string& path) {
    const auto it = schema.find(key);
    if (it == schema.end()) return std::optional<int64_t>();
    if (!is_count(*it)) return Error{pointer_child(path, key) + ": must be a non-negative integer"};
    const uint64_t n = it->get<uint64_t>();
    if (n > static_cast<uint64_t>(limits_.max_repeat)) {
      return Error{pointer_child(path, key) + ": " + std::to_string(n) + " is above the limit of " +
                   std::to_string(limits_.max_repeat) + " (the grammar would be too large)"};
    }
    return std::optional<int64_t>(static_cast<int64_t>(n));
  }

  Result<std::string> visit_string(const ordered_json& schema, const std::string& path) {
    GUFO_ASSIGN_OR_RETURN(const std::optional<int64_t> min, count(schema, "minLength", path));
    GUFO_ASSIGN_OR_RETURN(const std::optional<int64_t> max, count(schema, "maxLength", path));
    const auto pattern = schema.find("pattern");
    const auto format = schema.find("format");
    const bool has_length = min.has_value() || max.has_value();
    if (pattern != schema.end() && (has_length || format != schema.end())) {
      return Error{path + ": 'pattern' together with '" + std::string(has_length ? "minLength/maxLength" : "format") +
                   "' is not supported"};
    }
    if (format != schema.end() && has_length) {
      return Error{path + ": 'format' together with 'minLength/maxLength' is not supported"};
    }
    if (pattern != schema.end()) {
      if (!pattern->is_string()) return Error{pointer_child(path, "pattern") + ": must be a string"};
      Result<std::string> body = regex_to_gbnf(pattern->get<std::string>(), "json-key-char", limits_.max_repeat);
      if (!body.ok()) return Error{pointer_child(path, "pattern") + ": " + body.error().message};
      return rule("\"\\\"\" " + *body + " \"\\\"\"");
    }
    if (format != schema.end()) {
      const std::string name = format->is_string() ? format->get<std::string>() : "";
      for (const std::string_view known : kFormats) {
        if (name == known) return rule("\"\\\"\" format-" + name + " \"\\\"\"");
      }
      return Error{pointer_child(path, "format") + ": 'format' " + canonical_text(*format) +
                   " is not supported (date, time, date-time, uuid and email are)"};
    }
    if (!has_length) return std::string("json-string");
    if (max && min && *max < *min) return std::string("json-never");
    return rule("\"\\\"\" json-char{" + std::to_string(min.value_or(0)) + "," + (max ? std::to_string(*max) : "") +
                "} \"\\\"\"");
  }

  Result<std::string> visit_number(const ordered_json& schema, const std::string& path, bool integer) {
    std::optional<Bound> lo;
    std::optional<Bound> hi;
    for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      const auto it = schema.find(key);
      if (it == schema.end()) continue;
      const std::string at = pointer_child(path, key);
      if (!it->is_number()) return Error{at + ": must be a number (the boolean form of draft 4 is not supported)"};
      const double x = it->get<double>();
      const bool exclusive = key[0] == 'e';
      const bool lower = std::string_view(key).find("inimum") != std::string_view::npos;
      GUFO_ASSIGN_OR_RETURN(const Bound b, integral_bound(x, exclusive, lower, integer, at));
      std::optional<Bound>& slot = lower ? lo : hi;
      const bool tighter =
          !slot || (lower ? b.value > slot->value : b.value < slot->value) || (b.value == slot->value && b.exclusive);
      if (tighter) slot = b;
    }
    if (!lo && !hi) return std::string(integer ? "json-integer" : "json-number");
    const std::string body = bounded_number_gbnf(lo, hi, integer);
    return body.empty() ? std::string("json-never") : rule(body);
  }

  // A bound as an integer: for integers, rounded inward and made inclusive; for numbers, it
  // must be one already (a fractional bound would need decimal arithmetic in the grammar).
  static Result<Bound> integral_bound(double x, bool exclusive, bool lower, bool integer, const std::string& at) {
    if (!std::isfinite(x) || std::fabs(x) > static_cast<double>(kMaxBound)) {
      return Error{at + ": bounds beyond +-1e18 are not supported"};
    }
    if (integer) {
      double v = lower ? std::ceil(x) : std::floor(x);
      if (exclusive && v == x) v += lower ? 1 : -1;
      return Bound{static_cast<int64_t>(v), false};
    }
    if (std::floor(x) != x) {
      return Error{at + ": a fractional bound (" + std::to_string(x) +
                   ") on a number is not supported (integer bounds are)"};
    }
    return Bound{static_cast<int64_t>(x), exclusive};
  }

  Result<std::string> visit_array(const ordered_json& schema, const std::string& path, int depth);
  Result<std::string> visit_object(const ordered_json& schema, const std::string& path, int depth);
  std::string key_other_than(const std::vector<std::string>& names);

  const ordered_json& root_;
  JsonSchemaLimits limits_;
  std::string rules_;
  std::map<std::string, std::string> rule_by_body_;
  std::map<std::string, std::string> ref_rules_;  // $ref target -> its rule
  int next_rule_ = 0;
};

// Elements by position: prefixItems (or draft 7's array-form items) first, then the rest
// (items, or draft 7's additionalItems; absent: any value), minItems..maxItems in all. A rule
// per prefix position says what may follow it; the rest is one bounded repetition.
Result<std::string> SchemaCompiler::visit_array(const ordered_json& schema, const std::string& path, int depth) {
  std::vector<std::string> prefix;
  const ordered_json* rest = nullptr;
  std::string rest_path;
  const auto items = schema.find("items");
  const auto prefix_items = schema.find("prefixItems");
  const ordered_json* tuple = prefix_items != schema.end()                 ? &*prefix_items
                              : items != schema.end() && items->is_array() ? &*items
                                                                           : nullptr;
  const std::string tuple_key = prefix_items != schema.end() ? "prefixItems" : "items";
  if (tuple != nullptr) {
    if (!tuple->is_array()) return Error{pointer_child(path, tuple_key) + ": must be an array"};
    for (size_t i = 0; i < tuple->size(); ++i) {
      GUFO_ASSIGN_OR_RETURN(std::string element,
                            visit(tuple->at(i), pointer_child(path, tuple_key) + "/" + std::to_string(i), depth + 1));
      prefix.push_back(std::move(element));
    }
    const char* rest_key = prefix_items != schema.end() ? "items" : "additionalItems";
    if (const auto it = schema.find(rest_key); it != schema.end()) {
      rest = &*it;
      rest_path = pointer_child(path, rest_key);
    }
  } else if (items != schema.end()) {
    rest = &*items;
    rest_path = pointer_child(path, "items");
  }
  std::string rest_rule = "json-value";
  if (rest != nullptr) {
    GUFO_ASSIGN_OR_RETURN(rest_rule, visit(*rest, rest_path, depth + 1));
  }
  const bool rest_allowed = rest_rule != "json-never";
  GUFO_ASSIGN_OR_RETURN(const std::optional<int64_t> min_items, count(schema, "minItems", path));
  GUFO_ASSIGN_OR_RETURN(const std::optional<int64_t> max_items, count(schema, "maxItems", path));
  const int64_t min = min_items.value_or(0);
  const int64_t n_prefix = static_cast<int64_t>(prefix.size());
  if (max_items && *max_items < min) return std::string("json-never");
  if (!max_items && min == 0 && prefix.empty() && rest_rule == "json-value") return std::string("json-array");
  // After the prefix: the rest, repeated as often as the counts allow.
  std::string tail = "\"\"";
  const int64_t from = std::max<int64_t>(0, min - n_prefix);
  const std::optional<int64_t> to =
      max_items ? std::optional<int64_t>(std::max<int64_t>(0, *max_items - n_prefix)) : std::nullopt;
  if (!rest_allowed || (to && *to == 0)) {
    if (from > 0) return std::string("json-never");
  } else if (n_prefix == 0) {
    const std::string more = "( \",\" ws " + rest_rule + " ws ){" + std::to_string(std::max<int64_t>(from, 1) - 1) +
                             "," + (to ? std::to_string(*to - 1) : "") + "}";
    tail = rule(rest_rule + " ws " + more);
    if (from == 0) tail = rule(tail + " | \"\"");
  } else {
    tail =
        rule("( \",\" ws " + rest_rule + " ws ){" + std::to_string(from) + "," + (to ? std::to_string(*to) : "") + "}");
  }
  // The prefix from its end: position i is mandatory below minItems, absent at maxItems.
  std::string next = tail;
  for (int64_t i = n_prefix - 1; i >= 0; --i) {
    if (max_items && i >= *max_items) continue;
    const std::string entry = std::string(i > 0 ? "\",\" ws " : "") + prefix[static_cast<size_t>(i)] + " ws " + next;
    next = rule(i < min ? entry : entry + " | \"\"");
  }
  return rule("\"[\" ws " + next + " \"]\"");
}

// Members in the order of `properties` (then names only `required` lists), each required one
// mandatory, then the additional members. Rules first-i / after-i: the members from the i-th
// on, when none / some came before (so that commas go only between members).
Result<std::string> SchemaCompiler::visit_object(const ordered_json& schema, const std::string& path, int depth) {
  static const ordered_json kEmpty = ordered_json::object();
  static const ordered_json kTrue = true;
  const auto props_it = schema.find("properties");
  if (props_it != schema.end() && !props_it->is_object())
    return Error{pointer_child(path, "properties") + ": must be an object"};
  const ordered_json& properties = props_it != schema.end() ? *props_it : kEmpty;
  const auto additional_it = schema.find("additionalProperties");
  const ordered_json& additional = additional_it != schema.end() ? *additional_it : kTrue;
  std::vector<std::string> required;
  if (const auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array()) return Error{pointer_child(path, "required") + ": must be an array of strings"};
    for (const ordered_json& name : *it) {
      if (!name.is_string()) return Error{pointer_child(path, "required") + ": must be an array of strings"};
      required.push_back(name.get<std::string>());
    }
  }
  if (properties.empty() && required.empty() && additional == kTrue) return std::string("json-object");
  struct Member {
    std::string name;
    std::string rule;
    bool required = false;
  };
  std::vector<Member> members;
  std::vector<std::string> names;
  const auto is_required = [&](const std::string& name) {
    return std::find(required.begin(), required.end(), name) != required.end();
  };
  for (const auto& [name, property] : properties.items()) {
    const std::string at = pointer_child(pointer_child(path, "properties"), name);
    GUFO_ASSIGN_OR_RETURN(std::string value, visit(property, at, depth + 1));
    members.push_back({name, std::move(value), is_required(name)});
    names.push_back(name);
  }
  std::string additional_value;
  GUFO_ASSIGN_OR_RETURN(additional_value, visit(additional, pointer_child(path, "additionalProperties"), depth + 1));
  for (const std::string& name : required) {
    if (std::find(names.begin(), names.end(), name) != names.end()) continue;
    members.push_back({name, additional_value, true});
    names.push_back(name);
  }
  std::string first = "\"\"";
  std::string after = "\"\"";
  if (additional_value != "json-never") {
    const std::string key = names.empty() ? "json-string" : key_other_than(names);
    const std::string member = rule(key + " ws \":\" ws " + additional_value + " ws");
    after = rule("( \",\" ws " + member + " )*");
    first = rule(member + " " + after + " | \"\"");
  }
  for (size_t i = members.size(); i-- > 0;) {
    const Member& m = members[i];
    const std::string member = rule(gbnf_literal(canonical_text(m.name)) + " ws \":\" ws " + m.rule + " ws");
    const std::string first_here = member + " " + after;
    const std::string after_here = "\",\" ws " + member + " " + after;
    const bool impossible = m.rule == "json-never";
    if (m.required && impossible) return std::string("json-never");
    if (impossible) continue;
    first = rule(m.required ? first_here : first_here + " | " + first);
    after = rule(m.required ? after_here : after_here + " | " + after);
  }
  return rule("\"{\" ws " + first + " \"}\"");
}

// A member name (quotes included) equal to none of `names`: a trie of their canonical text,
// where each node may end the name (if no name ends there), go on to a child, or leave the
// trie with any other character and then anything.
std::string SchemaCompiler::key_other_than(const std::vector<std::string>& names) {
  struct Node {
    std::map<std::string, size_t> children;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    size_t at = 0;
    for (const std::string& unit : text_units(canonical_text(name))) {
      const auto [it, added] = trie[at].children.try_emplace(unit, trie.size());
      if (added) trie.emplace_back();
      at = it->second;
    }
    trie[at].terminal = true;
  }
  const std::string free = rule("json-key-char* \"\\\"\"");
  // Rules from the leaves up: a node's rule names its children's.
  std::vector<std::string> node_rule(trie.size());
  for (size_t n = trie.size(); n-- > 0;) {
    std::vector<std::string> alternatives;
    if (!trie[n].terminal) alternatives.emplace_back("\"\\\"\"");
    CodePoints taken = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
    std::vector<std::string> taken_escapes;
    for (const auto& [unit, child] : trie[n].children) {
      alternatives.push_back(gbnf_literal(unit) + " " + node_rule[child]);
      if (unit[0] == '\\') {
        taken_escapes.push_back(unit);
      } else {
        uint32_t cp = static_cast<unsigned char>(unit[0]);
        if (unit.size() > 1) {
          cp &= 0x7Fu >> unit.size();
          for (size_t k = 1; k < unit.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(unit[k]) & 0x3F);
        }
        taken.emplace_back(cp, cp);
      }
    }
    const CodePoints other = complement(taken);
    if (!other.empty()) alternatives.push_back(gbnf_class(other) + " " + free);
    for (uint32_t cp = 0; cp < 0x80 && !taken_escapes.empty(); ++cp) {
      if (cp >= 0x20 && cp != '"' && cp != '\\') continue;
      const std::string escape = canonical_escape(cp);
      if (std::find(taken_escapes.begin(), taken_escapes.end(), escape) == taken_escapes.end()) {
        alternatives.push_back(gbnf_literal(escape) + " " + free);
      }
    }
    if (taken_escapes.empty()) alternatives.push_back("json-key-escape " + free);
    node_rule[n] = rule(alternatives_of(alternatives));
  }
  return rule("\"\\\"\" " + node_rule[0]);
}

// The error for a grammar whose rule `rule_name` can reach itself before reading anything: only
// a '$ref' cycle with nothing between its steps makes one (objects, arrays and strings all
// open with a character), as in {"anyOf": [{"$ref": "#"}, ...]}: what it adds to the other
// branches is nothing, and GBNF cannot write it (left recursion). It names
// the reference when that rule is one, else every reference of the schema.
Error left_recursion_error(const std::string& rule_name, const std::map<std::string, std::string>& ref_rules) {
  std::string targets;
  for (const auto& [target, name] : ref_rules) {
    if (name == rule_name) {
      targets = target;
      break;
    }
    targets += (targets.empty() ? "" : ", ") + target;
  }
  return Error{"#: '$ref' " + targets + " comes back to itself before any JSON text is read: a reference cycle " +
               "with no object, array or string between its steps adds no instance and is not supported"};
}

}  // namespace

Result<std::string> json_schema_to_gbnf(const ordered_json& schema, const JsonSchemaLimits& limits) {
  return SchemaCompiler(schema, limits).run();
}

Result<Grammar> compile_json_schema(const ordered_json& schema, const JsonSchemaLimits& limits) {
  SchemaCompiler compiler(schema, limits);
  GUFO_ASSIGN_OR_RETURN(const std::string text, compiler.run());
  GbnfLimits gbnf_limits;
  gbnf_limits.max_bytes = limits.max_gbnf_bytes + kFormatRules.size() + 4096;
  gbnf_limits.max_repeat = std::max(gbnf_limits.max_repeat, limits.max_repeat);
  Result<Grammar> grammar = parse_gbnf(text, gbnf_limits);
  if (!grammar.ok()) {
    const std::string& message = grammar.error().message;
    if (message.find("matches nothing finite") != std::string::npos) {
      return Error{"#: the schema has no finite instance (a '$ref' recursion that never ends)"};
    }
    static const std::string kLeftRecursive = "' is left-recursive";
    if (const size_t at = message.find(kLeftRecursive); at != std::string::npos) {
      const size_t open = message.rfind('\'', at - 1);
      return left_recursion_error(message.substr(open + 1, at - open - 1), compiler.ref_rules());
    }
    return Error{std::string(kJsonSchemaBugPrefix) + ": " + message};
  }
  return grammar;
}

}  // namespace gufo::grammar
