// Constraint: what the engine lets a constrained generation pick. Tokens the grammar refuses
// get -inf (the sampler can never draw them, whatever the temperature or logit_bias); end
// tokens only once the grammar is complete; with free thinking the first token may open
// <think>, whose text is free except that it may not end there, and the grammar starts
// after </think>; no allowed token at all is reported, so the generation can stop.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/constraint.h"
#include "engine/sampler.h"
#include "grammar/gbnf.h"
#include "grammar/trigger.h"

namespace gufo::engine {
namespace {

// 0..2: "yes", "no", "."; 3: <think>; 4: </think>; 5: "maybe"; 6: the end token.
constexpr int32_t kYes = 0, kNo = 1, kDot = 2, kOpen = 3, kClose = 4, kMaybe = 5, kEnd = 6;

std::shared_ptr<const grammar::TokenTrie> trie() {
  return std::make_shared<const grammar::TokenTrie>(
      std::vector<std::string>{"yes", "no", ".", "<think>", "</think>", "maybe", ""}, std::vector<int32_t>{kEnd});
}

std::shared_ptr<const grammar::Grammar> yes_or_no() {
  auto g = grammar::parse_gbnf(R"(root ::= ("yes" | "no") ".")");
  EXPECT_TRUE(g.ok());
  return std::make_shared<const grammar::Grammar>(std::move(g).value());
}

std::vector<int32_t> allowed(Constraint& c) {
  std::vector<float> logits(7, 1.0f);
  if (!c.mask(logits)) return {-1};
  std::vector<int32_t> out;
  for (int32_t id = 0; id < 7; ++id) {
    if (!std::isinf(logits[static_cast<size_t>(id)])) out.push_back(id);
  }
  return out;
}

TEST(Constraint, OnlyWhatTheGrammarAllowsAndEndOnlyWhenComplete) {
  Constraint c(yes_or_no(), trie(), {.open = kOpen, .close = kClose}, false, false);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{kYes, kNo}));
  c.accept(kNo);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{kDot}));
  c.accept(kDot);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{kEnd}));
}

TEST(Constraint, TheSamplerCannotEscapeTheMask) {
  // A huge bias toward a refused token and a high temperature still draw only allowed ones.
  SamplerParams params;
  params.temperature = 2.0f;
  params.top_k = 0;
  params.top_p = 1.0f;
  params.min_p = 0.0f;
  params.logit_bias = {{kMaybe, 100.0f}};
  for (uint64_t seed = 0; seed < 50; ++seed) {
    params.seed = seed;
    Sampler sampler(params);
    Constraint c(yes_or_no(), trie(), {}, false, false);
    std::vector<float> logits = {0.0f, 0.0f, 5.0f, 5.0f, 5.0f, 9.0f, 9.0f};
    ASSERT_TRUE(c.mask(logits));
    const int32_t token = sampler.sample(logits);
    EXPECT_TRUE(token == kYes || token == kNo) << token;
  }
}

TEST(Constraint, FreeThinkingComesFirstThenTheGrammar) {
  Constraint c(yes_or_no(), trie(), {.open = kOpen, .close = kClose}, true, false);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{kYes, kNo, kOpen}));
  c.accept(kOpen);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{kYes, kNo, kDot, kOpen, kClose, kMaybe}));  // free, but no end
  c.accept(kMaybe);
  c.accept(kClose);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{kYes, kNo}));  // no second <think>
  // Not opened at the first token: the grammar from there on.
  Constraint direct(yes_or_no(), trie(), {.open = kOpen, .close = kClose}, true, false);
  direct.accept(kYes);
  EXPECT_EQ(allowed(direct), (std::vector<int32_t>{kDot}));
  // The prompt already opened it.
  Constraint open(yes_or_no(), trie(), {.open = kOpen, .close = kClose}, true, true);
  EXPECT_EQ(allowed(open).size(), 6u);
}

TEST(Constraint, ADeadEndIsReported) {
  auto g = grammar::parse_gbnf(R"(root ::= "yes" "!")");  // no token spells "!"
  ASSERT_TRUE(g.ok());
  Constraint c(std::make_shared<const grammar::Grammar>(std::move(g).value()), trie(), {}, false, false);
  c.accept(kYes);
  EXPECT_EQ(allowed(c), (std::vector<int32_t>{-1}));
}

TEST(Constraint, AMaskWiderThanAWordAndPaddedLogits) {
  // 200 tokens in 64-id words: all allowed (0..63), one refused (70), all refused (128..191),
  // a last partial word (192..199, 199 refused); then the end token, and logits padded to 256
  // as a model's embedding rows may be: ids past the vocabulary are never drawn.
  std::vector<std::string> vocab;
  for (int id = 0; id < 200; ++id) {
    const bool refused = id == 70 || (id >= 128 && id < 192) || id == 199;
    vocab.push_back((refused ? "!" : "t") + std::to_string(id));
  }
  vocab.emplace_back("");  // the end token, id 200
  auto g = grammar::parse_gbnf("root ::= [a-z0-9]+");
  ASSERT_TRUE(g.ok());
  Constraint c(std::make_shared<const grammar::Grammar>(std::move(g).value()),
               std::make_shared<const grammar::TokenTrie>(vocab, std::vector<int32_t>{200}), {}, false, false);
  std::vector<float> logits(256, 1.0f);
  ASSERT_TRUE(c.mask(logits));
  for (size_t id = 0; id < logits.size(); ++id) {
    const bool allowed = id < 200 && vocab[id][0] == 't';
    EXPECT_EQ(std::isinf(logits[id]), !allowed) << id;
  }
}

// A lazy grammar (grammar/trigger.h): free text until "<tool_call>", then only "{}".
namespace lazy {
constexpr int32_t kHi = 0, kSpace = 1, kCall = 2, kLt = 3, kRestOfCall = 4, kBraces = 5, kCallX = 6, kCallBraces = 7,
                  kThink = 8, kUnthink = 9, kFinish = 10, kN = 11;

std::shared_ptr<const grammar::TokenTrie> lazy_trie() {
  return std::make_shared<const grammar::TokenTrie>(
      std::vector<std::string>{"hi", " ", "<tool_call>", "<", "tool_call>", "{}", "<tool_call>x", "<tool_call>{}",
                               "<think>", "</think>", ""},
      std::vector<int32_t>{kFinish});
}

std::shared_ptr<const grammar::Grammar> lazy_grammar() {
  Result<std::string> free = grammar::text_until_trigger_gbnf("free", "<tool_call>", "rest");
  EXPECT_TRUE(free.ok());
  auto g = grammar::parse_gbnf("root ::= free-0\nrest ::= \"{}\"\n" + *free);
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::make_shared<const grammar::Grammar>(std::move(g).value());
}

std::vector<int32_t> lazy_allowed(Constraint& c) {
  std::vector<float> logits(kN, 1.0f);
  if (!c.mask(logits)) return {-1};
  std::vector<int32_t> out;
  for (int32_t id = 0; id < kN; ++id) {
    if (!std::isinf(logits[static_cast<size_t>(id)])) out.push_back(id);
  }
  return out;
}
}  // namespace lazy

TEST(Constraint, LazyGrammarIsFreeUntilTheTriggerThenConstrained) {
  using namespace lazy;
  Constraint c(lazy_grammar(), lazy_trie(), {.open = kThink, .close = kUnthink}, false, false);
  // Free: anything, and the end, but not a token that carries the trigger into a wrong rest.
  const std::vector<int32_t> free = {kHi,     kSpace,      kCall,  kLt,      kRestOfCall,
                                     kBraces, kCallBraces, kThink, kUnthink, kFinish};
  EXPECT_EQ(lazy_allowed(c), free);
  c.accept(kHi);
  c.accept(kSpace);
  EXPECT_EQ(lazy_allowed(c), free);
  c.accept(kCall);
  EXPECT_EQ(lazy_allowed(c), (std::vector<int32_t>{kBraces}));
  c.accept(kBraces);
  EXPECT_EQ(lazy_allowed(c), (std::vector<int32_t>{kFinish}));
  // The trigger spelled in two tokens triggers too.
  Constraint split(lazy_grammar(), lazy_trie(), {}, false, false);
  split.accept(kLt);
  split.accept(kRestOfCall);
  EXPECT_EQ(lazy_allowed(split), (std::vector<int32_t>{kBraces}));
}

TEST(Constraint, LazyGrammarAfterFreeThinking) {
  using namespace lazy;
  Constraint c(lazy_grammar(), lazy_trie(), {.open = kThink, .close = kUnthink}, true, false);
  c.accept(kThink);
  c.accept(kCallX);                                                // inside the thoughts, the trigger is just text
  EXPECT_EQ(lazy_allowed(c).size(), static_cast<size_t>(kN - 1));  // free, but no end
  c.accept(kUnthink);
  c.accept(kHi);
  EXPECT_EQ(lazy_allowed(c).back(), kFinish);
  c.accept(kCall);
  EXPECT_EQ(lazy_allowed(c), (std::vector<int32_t>{kBraces}));
}

}  // namespace
}  // namespace gufo::engine
