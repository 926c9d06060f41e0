// The official JSON-Schema-Test-Suite (Debian package json-schema-test-suite, draft 7) run
// through compile_json_schema and the byte matcher: for every test group whose schema
// compiles, each valid instance must be accepted whole and each invalid one refused. Groups
// refused at compile time are counted by the keyword (or construct) named, and printed.
// Instances are serialized compactly by nlohmann's dump(), with each object's members put in
// the order the schema first names them (unknown names after): the grammar fixes member
// order as llama.cpp's does (json_schema.h), and this test checks everything else exactly.
// Fails, not skips, when the suite is not installed (scripts/install-deps.sh installs it).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "grammar/json_schema.h"
#include "grammar_test_util.h"

namespace gufo::grammar {
namespace {

using nlohmann::ordered_json;

// Member names in the order the schema first mentions them: properties, then required,
// then everything else, depth first.
void collect_names(const ordered_json& schema, std::map<std::string, size_t>& rank) {
  if (!schema.is_object() && !schema.is_array()) return;
  if (schema.is_array()) {
    for (const ordered_json& item : schema) collect_names(item, rank);
    return;
  }
  const auto add = [&](const std::string& name) { rank.try_emplace(name, rank.size()); };
  if (const auto p = schema.find("properties"); p != schema.end() && p->is_object()) {
    for (const auto& [name, unused] : p->items()) add(name);
  }
  if (const auto r = schema.find("required"); r != schema.end() && r->is_array()) {
    for (const ordered_json& name : *r) {
      if (name.is_string()) add(name.get<std::string>());
    }
  }
  for (const char* literal : {"const", "enum"}) {
    if (const auto c = schema.find(literal); c != schema.end() && (c->is_object() || c->is_array())) {
      ordered_json values = *c;
      if (values.is_object()) values = ordered_json::array({values});
      for (const ordered_json& v : values) {
        if (v.is_object()) {
          for (const auto& [name, unused] : v.items()) add(name);
        }
      }
    }
  }
  for (const auto& [key, value] : schema.items()) collect_names(value, rank);
}

ordered_json in_schema_order(const ordered_json& value, const std::map<std::string, size_t>& rank) {
  if (value.is_array()) {
    ordered_json out = ordered_json::array();
    for (const ordered_json& item : value) out.push_back(in_schema_order(item, rank));
    return out;
  }
  if (!value.is_object()) return value;
  std::vector<std::pair<std::string, ordered_json>> members;
  for (const auto& [name, item] : value.items()) members.emplace_back(name, in_schema_order(item, rank));
  std::stable_sort(members.begin(), members.end(), [&](const auto& a, const auto& b) {
    const auto ra = rank.find(a.first);
    const auto rb = rank.find(b.first);
    return (ra == rank.end() ? SIZE_MAX : ra->second) < (rb == rank.end() ? SIZE_MAX : rb->second);
  });
  ordered_json out = ordered_json::object();
  for (auto& [name, item] : members) out[name] = std::move(item);
  return out;
}

// What a compile error is counted under: the keyword it names, or the construct.
std::string refusal_of(const std::string& message) {
  static const std::regex keyword("'([$A-Za-z]+)' is not supported");
  static const std::regex beside("'([$A-Za-z]+)' beside '(\\$ref|enum)");
  static const std::regex format("'format' (\"[^\"]*\") is not supported");
  std::smatch m;
  if (std::regex_search(message, m, format)) return "format " + m[1].str();
  if (std::regex_search(message, m, beside)) return m[1].str() + " beside " + m[2].str();
  if (std::regex_search(message, m, keyword)) return m[1].str();
  for (const char* construct : {"not a local reference", "names an anchor", "may match the same value", "lookahead",
                                "backreference", "word boundary", "fractional bound", "together with",
                                "no finite instance", "in more than one 'allOf' branch", "'$id' in a subschema"}) {
    if (message.find(construct) != std::string::npos) return construct;
  }
  return message;
}

TEST(JsonSchemaSuite, Draft7ValidAcceptedInvalidRefused) {
  const std::filesystem::path dir = GUFO_JSON_SCHEMA_SUITE_DIR;
  ASSERT_TRUE(std::filesystem::is_directory(dir))
      << dir << " is missing: the JSON-Schema-Test-Suite is not installed; run scripts/install-deps.sh";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  // The optional tests of what the compiler claims to do exactly: its formats, ECMA regular
  // expressions, 1.0 as an integer. Not optional/bignum.json: integers in exponent form
  // (1e+52) are refused by design (json_schema.h), stricter than the specification.
  for (const char* optional :
       {"optional/format/date.json", "optional/format/time.json", "optional/format/date-time.json",
        "optional/format/email.json", "optional/ecmascript-regex.json", "optional/zeroTerminatedFloats.json"}) {
    files.push_back(dir / optional);
  }
  size_t cases = 0;
  size_t groups_compiled = 0;
  size_t groups_refused = 0;
  std::map<std::string, size_t> refused;  // keyword or construct -> groups
  for (const std::filesystem::path& file : files) {
    const ordered_json groups = ordered_json::parse(std::ifstream(file));
    for (const ordered_json& group : groups) {
      const std::string where =
          file.lexically_relative(dir).string() + ": " + group.at("description").get<std::string>();
      Result<Grammar> compiled = compile_json_schema(group.at("schema"));
      if (!compiled.ok()) {
        ++groups_refused;
        ++refused[refusal_of(compiled.error().message)];
        continue;
      }
      ++groups_compiled;
      const auto grammar = std::make_shared<const Grammar>(std::move(compiled).value());
      std::map<std::string, size_t> rank;
      collect_names(group.at("schema"), rank);
      for (const ordered_json& test : group.at("tests")) {
        ++cases;
        const std::string text = in_schema_order(test.at("data"), rank).dump();
        const bool valid = test.at("valid").get<bool>();
        EXPECT_EQ(matches(grammar, text), valid)
            << where << " / " << test.at("description").get<std::string>() << ": " << text << " should be "
            << (valid ? "accepted" : "refused") << "\nschema: " << group.at("schema").dump();
      }
    }
  }
  std::printf("JSON-Schema-Test-Suite draft 7: %zu groups compiled (%zu cases run), %zu refused:\n", groups_compiled,
              cases, groups_refused);
  std::vector<std::pair<size_t, std::string>> by_count;
  for (const auto& [what, n] : refused) by_count.emplace_back(n, what);
  std::sort(by_count.rbegin(), by_count.rend());
  for (const auto& [n, what] : by_count) std::printf("  %4zu  %s\n", n, what.c_str());
  EXPECT_GT(cases, 0u) << "no case ran: every schema was refused";
}

}  // namespace
}  // namespace gufo::grammar
