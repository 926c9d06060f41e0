// libFuzzer target: a JSON Schema (the text up to the first 0 byte, parsed as the server
// parses a request's schema) through compile_json_schema with the server's limits, and, when
// it compiles, the rest of the input through a Matcher byte by byte. Nothing may crash, hang
// or take memory the limits do not bound; the compiler must never write GBNF that does not
// parse (its "(a bug)" error), and a text the grammar accepts whole must be JSON.
// Seeds: the JSON-Schema-Test-Suite's schemas, each with a valid instance (run_fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace {

// JSON text as RFC 8259 writes it. NOTE(overflow): nlohmann refuses a number past a double's
// range (1e400, as a parse_error or, past its exponent range, an out_of_range), which the
// RFC's grammar allows and JSON.parse reads as Infinity; that refusal alone does not count.
bool is_json(std::string_view text) {
  try {
    (void)nlohmann::json::parse(text);
    return true;
  } catch (const nlohmann::json::exception& e) {
    return std::string_view(e.what()).find("number overflow") != std::string_view::npos;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view text = input.substr(0, split);
  const std::string_view instance = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return 0;
  auto grammar = gufo::grammar::compile_json_schema(schema);
  if (!grammar.ok()) {
    // (By its start: other errors may quote the schema, which may say "(a bug)" itself.)
    if (grammar.error().message.starts_with(gufo::grammar::kJsonSchemaBugPrefix)) {
      std::fprintf(stderr, "json_schema_fuzz: %s\n", grammar.error().message.c_str());
      __builtin_trap();
    }
    return 0;
  }
  gufo::grammar::Matcher matcher(std::make_shared<const gufo::grammar::Grammar>(std::move(grammar).value()));
  const std::string_view fed = instance.substr(0, 512);
  for (const char c : fed) {
    if (!matcher.accept_byte(static_cast<uint8_t>(c))) return 0;
  }
  if (matcher.can_end() && !is_json(fed)) {
    std::fprintf(stderr, "json_schema_fuzz: the grammar accepts a text that is not JSON\n");
    __builtin_trap();
  }
  return 0;
}
