// Constraint (see constraint.h).
#include "engine/constraint.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace gufo::engine {

ThinkTokens think_tokens(const tokenizer::Vocab& vocab) {
  ThinkTokens think;
  if (auto open = vocab.token_ids.find("<think>"); open != vocab.token_ids.end()) think.open = open->second;
  if (auto close = vocab.token_ids.find("</think>"); close != vocab.token_ids.end()) think.close = close->second;
  return think;
}

std::shared_ptr<const grammar::TokenTrie> vocabulary_trie(const tokenizer::Tokenizer& tokenizer,
                                                          std::vector<int32_t> end_tokens) {
  const tokenizer::Vocab& vocab = tokenizer.vocab();
  std::vector<std::string> bytes(static_cast<size_t>(vocab.n_vocab()));
  for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
    const tokenizer::TokenType type = vocab.types[static_cast<size_t>(id)];
    if (type == tokenizer::TokenType::Control || type == tokenizer::TokenType::Unused) continue;
    // An end token ends; it is never the text it is spelled with (allowed once complete).
    if (std::find(end_tokens.begin(), end_tokens.end(), id) != end_tokens.end()) continue;
    Result<std::string> text = tokenizer.token_bytes(id);
    if (text.ok()) bytes[static_cast<size_t>(id)] = std::move(text).value();
  }
  return std::make_shared<const grammar::TokenTrie>(bytes, std::move(end_tokens));
}

Constraint::Constraint(std::shared_ptr<const grammar::Grammar> grammar, std::shared_ptr<const grammar::TokenTrie> trie,
                       ThinkTokens think, bool free_thinking, bool thinking_open,
                       std::shared_ptr<grammar::MaskCache> masks)
    : trie_(trie),
      matcher_(std::move(grammar), std::move(trie), std::move(masks)),
      think_(think),
      phase_(!free_thinking || think.open < 0 || think.close < 0 ? Phase::Constrained
             : thinking_open                                     ? Phase::Thinking
                                                                 : Phase::MayThink) {}

bool Constraint::mask(std::span<float> logits) {
  constexpr float kNever = -std::numeric_limits<float>::infinity();
  if (phase_ == Phase::Thinking) {
    for (int32_t id : trie_->end_tokens()) logits[static_cast<size_t>(id)] = kNever;
    return true;
  }
  if (dead_) return false;
  matcher_.allowed_tokens(allowed_);
  if (phase_ == Phase::MayThink) allowed_[static_cast<size_t>(think_.open)] = true;
  if (std::find(allowed_.begin(), allowed_.end(), true) == allowed_.end()) return false;
  for (size_t id = 0; id < logits.size(); ++id) {
    if (id >= allowed_.size() || !allowed_[id]) logits[id] = kNever;
  }
  return true;
}

std::optional<int32_t> Constraint::sample(Sampler& sampler, std::span<const float> logits,
                                          std::vector<float>& scratch) {
  scratch.assign(logits.begin(), logits.end());
  if (!mask(scratch)) return std::nullopt;
  const int32_t token = sampler.sample(scratch);
  accept(token);
  return token;
}

void Constraint::accept(int32_t token) {
  switch (phase_) {
    case Phase::Thinking:
      if (token == think_.close) phase_ = Phase::Constrained;
      return;
    case Phase::MayThink:
      if (token == think_.open) {
        phase_ = Phase::Thinking;
        return;
      }
      phase_ = Phase::Constrained;
      break;
    case Phase::Constrained:
      break;
  }
  // Allowed by mask(), so it advances; if it ever did not, nothing more is allowed (the
  // generation ends) rather than going on out of step with the grammar.
  if (!matcher_.accept_token(token)) dead_ = true;
}

}  // namespace gufo::engine
