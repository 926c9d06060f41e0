// A generation's grammar as the engine applies it (RequestOptions::grammar): before each
// token, every token the grammar does not allow gets a logit of -inf, so the sampler (any
// temperature, top-k/p, penalties, logit_bias) can only pick an allowed one; an end token is
// allowed only once the grammar is complete. A reasoning model may think first: with
// free_thinking, the first token may also open a <think> block, and until its </think> the
// text is free (only ending is refused: the answer must still come), then the grammar starts.
// Tested by tests/unit/engine/constraint_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "engine/sampler.h"
#include "grammar/grammar.h"
#include "grammar/token_matcher.h"
#include "grammar/token_set.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {

// The ids of <think> and </think> in a vocabulary (-1: it has none).
struct ThinkTokens {
  int32_t open = -1;
  int32_t close = -1;
};

// The ids of <think> and </think> in `vocab`, if it has them.
ThinkTokens think_tokens(const tokenizer::Vocab& vocab);

// `tokenizer`'s vocabulary as a token trie: every token's bytes except control, unused and
// end tokens (never text), with `end_tokens` allowed once a grammar is complete.
std::shared_ptr<const grammar::TokenTrie> vocabulary_trie(const tokenizer::Tokenizer& tokenizer,
                                                          std::vector<int32_t> end_tokens);

class Constraint {
 public:
  // `masks`: shared with the other generations under this grammar (null: its own).
  Constraint(std::shared_ptr<const grammar::Grammar> grammar, std::shared_ptr<const grammar::TokenTrie> trie,
             ThinkTokens think, bool free_thinking, bool thinking_open,
             std::shared_ptr<grammar::MaskCache> masks = nullptr);

  // Sets the logit of every token not allowed now to -inf. False when no token is allowed (the
  // vocabulary cannot continue the grammar from here): the generation must end.
  bool mask(std::span<float> logits);
  // Records the token chosen from the masked logits.
  void accept(int32_t token);
  // mask(), a draw from `sampler`, accept(): the next token, or none at a dead end. `scratch`
  // holds the masked copy of `logits` (kept by the caller, so no allocation per token).
  std::optional<int32_t> sample(Sampler& sampler, std::span<const float> logits, std::vector<float>& scratch);

 private:
  enum class Phase { MayThink, Thinking, Constrained };

  std::shared_ptr<const grammar::TokenTrie> trie_;
  grammar::TokenMatcher matcher_;
  ThinkTokens think_;
  Phase phase_;
  grammar::TokenBits allowed_;
  bool dead_ = false;
};

}  // namespace gufo::engine
