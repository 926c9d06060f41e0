// Constrained decoding cost (Google Benchmark): the token mask of the JSON-object grammar
// (grammar/json_gbnf.h) over a real vocabulary, at the points of an answer where it is
// cheapest and dearest (outside any string, where few tokens fit; inside a string, where
// almost every token does), and the grammar's compile time.
// Usage: grammar_bench VOCAB.gguf [benchmark flags]   (tools/bench/grammar_bench.sh makes the
// Qwen3 vocabulary from tests/js's npm package and runs it).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/generate.h"
#include "gguf/file.h"
#include "grammar/gbnf.h"
#include "grammar/json_gbnf.h"
#include "grammar/token_matcher.h"
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
  std::vector<bool> allowed;
  for (auto _ : state) {
    matcher.allowed_tokens(allowed);
    benchmark::DoNotOptimize(allowed);
  }
  size_t n_allowed = 0;
  for (bool a : allowed) n_allowed += a ? 1 : 0;
  state.counters["allowed"] = static_cast<double>(n_allowed);
}

// A whole answer, tokenized as the model would write it, each token's mask computed before it
// is accepted. cold: a fresh mask cache each time (every state met for the first time, the
// cost of the first request); warm: one cache for all (the server shares it between requests
// under the same grammar). Reported per token.
void BM_JsonAnswer(benchmark::State& state, std::vector<int32_t> tokens, bool warm) {
  std::vector<bool> allowed;
  const auto shared = std::make_shared<gufo::grammar::MaskCache>(g_json, g_trie);
  for (auto _ : state) {
    gufo::grammar::TokenMatcher matcher(g_json, g_trie, warm ? shared : nullptr);
    for (int32_t token : tokens) {
      matcher.allowed_tokens(allowed);
      if (!allowed[static_cast<size_t>(token)] || !matcher.accept_token(token)) {
        state.SkipWithError("the answer does not match the grammar");
        return;
      }
    }
  }
  state.counters["tokens"] = static_cast<double>(tokens.size());
  if (warm) state.counters["states"] = static_cast<double>(shared->n_states());
  state.counters["per_token"] = benchmark::Counter(static_cast<double>(tokens.size()),
                                                   benchmark::Counter::kIsIterationInvariantRate |
                                                       benchmark::Counter::kInvert);
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
  g_json = std::make_shared<const gufo::grammar::Grammar>(gufo::grammar::parse_gbnf(gufo::grammar::kJsonObjectGbnf).value());
  benchmark::RegisterBenchmark("json_mask/start", BM_JsonMask, std::string());
  benchmark::RegisterBenchmark("json_mask/after_key", BM_JsonMask, std::string(R"({"name": )"));
  benchmark::RegisterBenchmark("json_mask/in_string", BM_JsonMask, std::string(R"({"name": "Ada Love)"));
  benchmark::RegisterBenchmark("json_mask/in_number", BM_JsonMask, std::string(R"({"a": {"b": [1, 2.5)"));
  const std::string answer =
      R"({"name": "Ada Lovelace", "born": 1815, "fields": ["mathematics", "computing"], )"
      R"("notes": {"first program": true, "machine": "Analytical Engine", "ratio": -2.5e-3}})";
  benchmark::RegisterBenchmark("json_answer/cold", BM_JsonAnswer, tokenizer->encode(answer, false), false);
  benchmark::RegisterBenchmark("json_answer/warm", BM_JsonAnswer, tokenizer->encode(answer, false), true);
  benchmark::RegisterBenchmark("compile/json_object", BM_CompileJsonGrammar);
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
