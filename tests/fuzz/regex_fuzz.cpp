// libFuzzer target: a JSON Schema `pattern` (the bytes up to the first 0 byte) through
// regex_to_gbnf, and, when it translates, the schema {"type": "string", "pattern": ...}
// through compile_json_schema and the rest of the input through a Matcher. Nothing may crash,
// hang or take memory the limits do not bound; a pattern that translates must compile (only
// a limit may refuse it, never the compiler's "(a bug)"), and a text the grammar accepts
// whole must be one JSON string. Seeds: the patterns of the JSON-Schema-Test-Suite and of
// tests/unit/grammar (run_fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/regex_to_gbnf.h"

namespace {

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "regex_fuzz: %s\n", message.c_str());
  __builtin_trap();
}

// What a request can hold: a string nlohmann parsed, i.e. strict UTF-8 (dump() checks it).
bool strict_utf8(std::string_view bytes) {
  try {
    (void)nlohmann::json(std::string(bytes)).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view pattern = input.substr(0, split);
  const std::string_view text = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  const gufo::grammar::JsonSchemaLimits limits;
  if (!gufo::grammar::regex_to_gbnf(pattern, "json-key-char", limits.max_repeat).ok()) return 0;
  if (!strict_utf8(pattern)) return 0;
  const nlohmann::ordered_json schema = {{"type", "string"}, {"pattern", std::string(pattern)}};
  auto grammar = gufo::grammar::compile_json_schema(schema, limits);
  if (!grammar.ok()) {
    if (grammar.error().message.starts_with(gufo::grammar::kJsonSchemaBugPrefix)) fail(grammar.error().message);
    return 0;
  }
  gufo::grammar::Matcher matcher(std::make_shared<const gufo::grammar::Grammar>(std::move(grammar).value()));
  const std::string_view fed = text.substr(0, 256);
  for (const char c : fed) {
    if (!matcher.accept_byte(static_cast<uint8_t>(c))) return 0;
  }
  if (matcher.can_end()) {
    const auto value = nlohmann::json::parse(fed, nullptr, /*allow_exceptions=*/false);
    if (!value.is_string()) fail("the grammar accepts a text that is not one JSON string");
  }
  return 0;
}
