// compile_json_schema: schemas as OpenAI's structured-output guide and llama.cpp's users write
// them (nested objects, arrays of objects, enums, anyOf with null, $defs recursion), each
// checked by running valid and invalid JSON text through the byte matcher (a whole match, or
// not); the keywords one by one (bounds, lengths, patterns, formats, tuples, allOf merges);
// and the errors, each naming the keyword and its JSON pointer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace gufo::grammar {
namespace {

using nlohmann::ordered_json;

std::shared_ptr<const Grammar> compiled(const char* schema) {
  return shared_grammar(compile_json_schema(ordered_json::parse(schema)), schema);
}

std::string error_of(const char* schema) {
  auto g = compile_json_schema(ordered_json::parse(schema));
  return g.ok() ? "<compiled>" : g.error().message;
}

void expect_all(const char* schema, std::initializer_list<const char*> valid,
                std::initializer_list<const char*> invalid) {
  const auto g = compiled(schema);
  for (const char* v : valid) EXPECT_TRUE(matches(g, v)) << schema << " should accept " << v;
  for (const char* v : invalid) EXPECT_FALSE(matches(g, v)) << schema << " should reject " << v;
}

TEST(JsonSchema, OpenAiStyleNestedObjects) {
  const char* schema = R"({
    "type": "object",
    "properties": {
      "name": {"type": "string"},
      "age": {"type": "integer", "minimum": 0, "maximum": 150},
      "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                  "required": ["city", "zip"], "additionalProperties": false},
      "tags": {"type": "array", "items": {"type": "string"}}
    },
    "required": ["name", "age", "address", "tags"],
    "additionalProperties": false
  })";
  expect_all(schema,
             {R"({"name":"Ada","age":36,"address":{"city":"London","zip":"N1"},"tags":[]})",
              "{ \"name\": \"Ada\",\n  \"age\": 0, \"address\": { \"city\": \"x\", \"zip\": \"y\" }, \"tags\": [\"a\", "
              "\"b\"] }",
              R"({"name":"","age":150,"address":{"city":"","zip":""},"tags":["\u00e9\n"]})"},
             {R"({"name":"Ada","age":-1,"address":{"city":"L","zip":"N"},"tags":[]})",
              R"({"name":"Ada","age":151,"address":{"city":"L","zip":"N"},"tags":[]})",
              R"({"name":"Ada","age":3,"address":{"city":"L"},"tags":[]})",
              R"({"age":3,"name":"Ada","address":{"city":"L","zip":"N"},"tags":[]})",
              R"({"name":"Ada","age":3,"address":{"city":"L","zip":"N"},"tags":[],"extra":1})",
              R"({"name":"Ada","age":3.5,"address":{"city":"L","zip":"N"},"tags":[]})",
              R"({"name":"Ada","age":3,"address":{"city":"L","zip":"N"},"tags":[1]})"});
}

TEST(JsonSchema, ArraysOfObjectsEnumsAndNullable) {
  const char* schema = R"({
    "type": "object",
    "properties": {
      "steps": {"type": "array", "minItems": 1, "maxItems": 3, "items": {
        "type": "object",
        "properties": {"explanation": {"type": "string"}, "output": {"type": ["string", "null"]}},
        "required": ["explanation", "output"], "additionalProperties": false}},
      "final": {"enum": ["yes", "no", 3, null]},
      "note": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}
    },
    "required": ["steps", "final", "note"],
    "additionalProperties": false
  })";
  expect_all(
      schema,
      {R"({"steps":[{"explanation":"a","output":null}],"final":"yes","note":null})",
       R"({"steps":[{"explanation":"a","output":"b"},{"explanation":"c","output":null}],"final":3,"note":"abc"})",
       R"({"steps":[{"explanation":"a","output":"b"}],"final":3.0,"note":"\u00e9\ud83d\ude00"})",
       R"({"steps":[{"explanation":"a","output":"b"}],"final":null,"note":""})"},
      {R"({"steps":[],"final":"yes","note":null})",
       R"({"steps":[{"explanation":"a","output":null},{"explanation":"a","output":null},{"explanation":"a","output":null},{"explanation":"a","output":null}],"final":"yes","note":null})",
       R"({"steps":[{"explanation":"a","output":null}],"final":"maybe","note":null})",
       R"({"steps":[{"explanation":"a","output":null}],"final":"yes","note":"abcd"})",
       R"({"steps":[{"explanation":"a","output":1}],"final":"yes","note":null})",
       R"({"steps":[{"explanation":"a","output":null}],"final":"yes","note":"\ud83d"})"});
}

TEST(JsonSchema, OptionalPropertiesKeepTheirOrderAndCommas) {
  const char* schema = R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"},
    "c": {"type": "integer"}}, "required": ["b"], "additionalProperties": false})";
  expect_all(schema, {R"({"b":1})", R"({"a":1,"b":2})", R"({"b":2,"c":3})", R"({"a":1,"b":2,"c":3})"},
             {"{}", R"({"a":1})", R"({,"b":1})", R"({"b":1,})", R"({"c":1,"b":2})", R"({"a":1,"b":2,"c":3,"d":4})"});
}

TEST(JsonSchema, AdditionalPropertiesAbsentTrueOrASchema) {
  // Absent means any value (the specification); extra members come after the known ones and
  // never reuse a known name.
  expect_all(R"({"properties": {"a": {"type": "integer"}}})",
             {"{}", R"({"a":1})", R"({"a":1,"b":"x"})", R"({"ab":[1]})", R"({"":0,"b":{}})", "3", "\"s\""},
             {R"({"a":"x"})", R"({"b":1,"a":1})", R"({"a":1,"a":2})"});
  expect_all(R"({"type": "object", "additionalProperties": {"type": "boolean"}})", {"{}", R"({"x":true,"y":false})"},
             {R"({"x":1})"});
  expect_all(R"({"type": "object", "properties": {"a\"b": {"const": 1}}, "additionalProperties": {"type": "null"}})",
             {R"({"a\"b":1})", R"({"a\"c":null})", R"({"a\"":null})", R"({"a":null,"a\nb":null})"},
             {R"({"a\"b":null})", R"({"a\"b":1,"a\"b":null})"});
}

TEST(JsonSchema, RecursionThroughDefs) {
  const char* list = R"({
    "$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
      "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["value", "next"], "additionalProperties": false}},
    "$ref": "#/$defs/node"
  })";
  expect_all(list, {R"({"value":1,"next":null})", R"({"value":1,"next":{"value":2,"next":{"value":3,"next":null}}})"},
             {R"({"value":1})", R"({"value":1,"next":{"value":2}})", R"({"value":1,"next":{}})"});
  const char* tree = R"({"type": "object", "properties": {"name": {"type": "string"},
    "children": {"type": "array", "items": {"$ref": "#"}}}, "required": ["name"], "additionalProperties": false})";
  expect_all(tree,
             {R"({"name":"r"})", R"({"name":"r","children":[{"name":"a","children":[{"name":"b"}]},{"name":"c"}]})"},
             {R"({"name":"r","children":[{}]})", R"({"children":[]})"});
  // draft 7's definitions, and a pointer needing escapes.
  expect_all(R"({"definitions": {"a/b": {"type": "boolean"}}, "items": {"$ref": "#/definitions/a~1b"}})",
             {"[true,false]", "[]"}, {"[1]"});
}

TEST(JsonSchema, IntegerAndNumberBounds) {
  expect_all(R"({"type": "integer", "minimum": -15, "maximum": 1234})",
             {"-15", "-9", "-0", "0", "7", "10", "99", "100", "999", "1000", "1234", "1200", "12.0"},
             {"-16", "-100", "1235", "1300", "9999", "01", "1.5", "1e2", "--1", "12.00"});
  // One zero after the point, no more: a sampled model drew "3.000..." out to max_tokens.
  expect_all(R"({"type": "integer"})", {"3", "3.0", "-0.0"}, {"3.00", "3.000000000"});
  expect_all(R"({"const": 2})", {"2", "2.0"}, {"2.00"});
  expect_all(R"({"type": "integer", "exclusiveMinimum": 9, "exclusiveMaximum": 100.5})", {"10", "55", "99", "100"},
             {"9", "101", "0", "-10"});
  expect_all(R"({"type": "integer", "minimum": 1.2})", {"2", "10", "123456789012"}, {"1", "0", "-3"});
  expect_all(R"({"type": "number", "minimum": 0, "exclusiveMaximum": 10})", {"0", "-0", "0.5", "9.999", "9", "3.0"},
             {"-0.1", "10", "10.0", "10.5", "11", "1e1"});
  expect_all(R"({"type": "number", "exclusiveMinimum": -2, "maximum": -1})", {"-1.5", "-1", "-1.0", "-1.99"},
             {"-2", "-2.0", "-0.5", "0", "-1.01e0"});
  expect_all(R"({"type": "number"})", {"1", "-0.5e+10", "1E3", "0.0"}, {"01", ".5", "1.", "+1"});
  EXPECT_NE(error_of(R"({"type": "number", "maximum": 2.5})").find("#/maximum: a fractional bound"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "integer", "maximum": 1e30})").find("#/maximum: bounds beyond"), std::string::npos);
}

TEST(JsonSchema, StringLengthsPatternsAndFormats) {
  expect_all(R"({"type": "string", "minLength": 2, "maxLength": 3})",
             {R"("ab")", R"("abc")", "\"\xC3\xA9\xC3\xA9\"", R"("\ud83d\ude00x")", R"("\n\t")"},
             {R"("a")", R"("abcd")", "\"\xC3\xA9\"", R"("\ud83d\ude00")"});
  expect_all(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d{3,4}$"})", {R"("AB-123")", R"("ZZ-0000")"},
             {R"("ab-123")", R"("AB-12")", R"("AB-12345")", R"("xAB-123")"});
  expect_all(R"({"pattern": "a(b|cd)*e?"})", {R"("a")", R"("xxabcdbe yy")", "1", R"("\"a")"}, {R"("bcd")", R"("")"});
  expect_all(R"({"type": "string", "pattern": "^\\w+\\.(?:png|jpe?g)$"})",
             {R"("cat_1.png")", R"("x.jpg")", R"("x.jpeg")"}, {R"("x.gif")", R"(".png")", R"("a b.png")"});
  expect_all(R"({"type": "string", "pattern": "^[^a-z\"]+$"})", {R"("AB\\")", R"("\n1")"}, {R"("a")", R"("\"")"});
  expect_all(R"({"type": "string", "format": "date"})", {R"("2024-02-29")", R"("2000-02-29")", R"("2023-12-31")"},
             {R"("2023-02-29")", R"("1900-02-29")", R"("2023-04-31")", R"("2023-13-01")", R"("2023-1-01")"});
  expect_all(R"({"type": "string", "format": "date-time"})",
             {R"("2024-05-06T07:08:09Z")", R"("2024-05-06t23:59:59.123+05:30")"},
             {R"("2024-05-06 07:08:09Z")", R"("2024-05-06T24:00:00Z")", R"("2024-05-06T07:08:09")"});
  expect_all(R"({"format": "time"})", {R"("12:00:00-01:00")", R"("12:00:00.123456789Z")", "12"},
             {R"("12:00")", R"("12:00:00.1234567890Z")"});
  expect_all(R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
             {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  // A domain label of 63 characters is the longest (RFC 1035, and ajv's email format).
  const std::string label63(63, 'a');
  const std::string first = "\"j@" + label63 + ".com\"", last = "\"j@x." + label63 + "\"";
  const std::string too_long = "\"j@" + label63 + "b.com\"";
  expect_all(
      R"({"type": "string", "format": "email"})", {R"("joe.bloggs+x@mail.example.com")", first.c_str(), last.c_str()},
      {R"("joe@localhost")", R"("@x.com")", R"("a..b@x.com")", R"("a@-x.com")", too_long.c_str(), R"("j@x-.com")"});
}

TEST(JsonSchema, TuplesItemCountsAndConstants) {
  expect_all(R"({"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": false})",
             {"[]", "[1]", R"([1,"a"])"}, {R"([1,"a",2])", R"(["a"])"});
  expect_all(R"({"items": [{"type": "integer"}], "additionalItems": {"type": "boolean"}, "minItems": 2})",
             {"[1,true]", "[1,true,false]"}, {"[1]", "[1,2]", "[]"});
  expect_all(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})", {"[1,2]", "[1, 2, 3]"},
             {"[1]", "[1,2,3,4]", "[]"});
  expect_all(R"({"const": {"a": [1, null], "b": "x"}})",
             {R"({"a":[1,null],"b":"x"})", R"({ "a": [1.0, null], "b": "x" })"},
             {R"({"a":[1,null]})", R"({"a":[1,null],"b":"y"})"});
  expect_all("true", {"1", "[]", R"({"a":[null]})"}, {"nul"});
  expect_all("{}", {"1", "[]", R"({"a":[null]})"}, {"]"});
  expect_all(R"({"type": ["boolean", "null"]})", {"true", "null"}, {"0"});
}

TEST(JsonSchema, AllOfMergesObjects) {
  const char* schema = R"({"allOf": [
    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    {"properties": {"name": {"type": "string", "maxLength": 5}}, "required": ["name"], "additionalProperties": false},
    {"properties": {"name": {"minLength": 2}}}
  ]})";
  // additionalProperties false of the second branch forbids 'id' (the second branch does not
  // list it): nothing is valid, exactly as a validator says.
  expect_all(schema, {}, {R"({"id":1,"name":"ab"})", R"({"name":"ab"})"});
  const char* open = R"({"allOf": [
    {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
    {"properties": {"name": {"type": "string", "maxLength": 5}}, "required": ["name"]},
    {"properties": {"name": {"minLength": 2}}}
  ]})";
  expect_all(
      open, {R"({"id":1,"name":"ab"})", R"({"id":1,"name":"abcde","x":0})"},
      {R"({"id":1,"name":"a"})", R"({"id":1,"name":"abcdef"})", R"({"name":"ab"})", R"({"id":"1","name":"ab"})"});
  expect_all(R"({"$defs": {"base": {"properties": {"kind": {"const": "a"}}, "required": ["kind"]}},
    "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"n": {"type": "integer"}}, "required": ["n"]}]})",
             {R"({"kind":"a","n":1})"}, {R"({"n":1})", R"({"kind":"b","n":1})"});
}

TEST(JsonSchema, OneOfOnlyWhenBranchesAreDisjoint) {
  expect_all(R"({"oneOf": [{"type": "string"}, {"type": "integer"}]})", {R"("a")", "1"}, {"1.5", "null"});
  expect_all(R"({"oneOf": [
      {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}, "required": ["kind", "r"]},
      {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}}, "required": ["kind", "side"]}]})",
             {R"({"kind":"circle","r":1})", R"({"kind":"square","side":2})"}, {R"({"kind":"circle","side":2})"});
  EXPECT_NE(error_of(R"({"oneOf": [{"type": "number"}, {"type": "integer"}]})")
                .find("#/oneOf: 'oneOf' whose branches 0 and 1"),
            std::string::npos);
}

TEST(JsonSchema, ErrorsNameTheKeywordAndItsPath) {
  EXPECT_EQ(error_of(R"({"properties": {"tags": {"type": "array", "uniqueItems": true}}})"),
            "#/properties/tags: 'uniqueItems' is not supported");
  EXPECT_EQ(error_of(R"({"items": {"not": {"type": "null"}}})"), "#/items: 'not' is not supported");
  EXPECT_EQ(error_of(R"({"$defs": {"x": {"multipleOf": 2}}, "anyOf": [{"$ref": "#/$defs/x"}]})"),
            "#/$defs/x: 'multipleOf' is not supported");
  EXPECT_NE(error_of(R"({"$ref": "#/$defs/missing"})").find("#: '$ref' #/$defs/missing names nothing"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"$ref": "other.json#/a"})").find("not a local reference"), std::string::npos);
  // An error that quotes the schema is the schema's, even where the schema says "(a bug)" (the
  // fuzz targets tell the compiler's own bugs by kJsonSchemaBugPrefix; libFuzzer found this one).
  const std::string quoting = error_of(R"j({"$ref": "http://x/y.json#/z(a bug)"})j");
  EXPECT_NE(quoting.find("not a local reference"), std::string::npos) << quoting;
  EXPECT_FALSE(quoting.starts_with(kJsonSchemaBugPrefix)) << quoting;
  EXPECT_NE(error_of(R"({"$ref": "#", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})").find("beside '$ref'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "object", "properties": {"a": {"$ref": "#"}}, "required": ["a"]})")
                .find("no finite instance"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "array", "maxItems": 1000000000})").find("#/maxItems: 1000000000 is above the limit"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "minLength": 99999999})").find("#/minLength"), std::string::npos);
  EXPECT_NE(
      error_of(R"({"type": "string", "pattern": "(a)\\1"})").find("#/pattern: pattern (a)\\1: at 4: the escape '\\1'"),
      std::string::npos);
  EXPECT_NE(error_of(R"j({"type": "string", "pattern": "a(?=b)"})j").find("lookahead"), std::string::npos);
  EXPECT_NE(error_of(R"({"type": "string", "format": "uri"})").find("#/format: 'format' \"uri\" is not supported"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"type": "strin"})").find("#/type: unknown type \"strin\""), std::string::npos);
  EXPECT_NE(error_of(R"({"properties": 3})").find("#/properties: must be an object"), std::string::npos);
  EXPECT_NE(error_of("3").find("#: a schema must be an object or a boolean"), std::string::npos);
  // Annotations and unknown keywords change nothing.
  expect_all(R"({"title": "t", "description": "d", "examples": [1], "x-extra": 1, "default": 2, "type": "integer"})",
             {"1"}, {"\"a\""});
}

TEST(JsonSchema, HostileSchemasAreBounded) {
  std::string deep = "true";
  for (int i = 0; i < 200; ++i) deep = R"({"items": )" + deep + "}";
  EXPECT_NE(error_of(deep.c_str()).find("nest deeper"), std::string::npos);
  // A reference chain through allOf that never ends is cut off, not followed forever.
  EXPECT_NE(error_of(R"({"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})").find("too deeply"),
            std::string::npos);
  std::string wide = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 30000; ++i)
    wide += (i ? "," : "") + std::string("\"p") + std::to_string(i) + R"(": {"type": "array", "maxItems": 9000})";
  wide += "}}";
  EXPECT_NE(error_of(wide.c_str()).find("grows past"), std::string::npos);
}

// Found by tests/fuzz/json_schema_fuzz: a reference that reaches itself before any JSON text
// is read made a left-recursive grammar, refused as "a bug"; it is the schema's error.
TEST(JsonSchema, ReferenceCyclesThatReadNothingAreNamed) {
  EXPECT_EQ(error_of(R"({"items": [{"type": "integer"}, {"$ref": "#/items/1"}]})"),
            "#: '$ref' #/items/1 comes back to itself before any JSON text is read: a reference cycle with no object, "
            "array or string between its steps adds no instance and is not supported");
  EXPECT_NE(error_of(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})").find("comes back to itself"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"const": 1}]}},
                         "$ref": "#/$defs/a"})")
                .find("comes back to itself"),
            std::string::npos);
  // A cycle with no way out at all has no instance: the error it had before.
  EXPECT_EQ(error_of(R"({"$ref": "#"})"), "#: the schema has no finite instance (a '$ref' recursion that never ends)");
  // A cycle through an array or object reads a character at each step: a grammar, as before.
  expect_all(R"({"anyOf": [{"type": "array", "items": {"$ref": "#"}, "maxItems": 2}, {"type": "null"}]})",
             {"null", "[]", "[null,[null]]"}, {"[[],[],[]]", "1"});
}

}  // namespace
}  // namespace gufo::grammar
