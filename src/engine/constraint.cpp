// Constraint (see constraint.h).
#include "engine/constraint.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
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

namespace {

constexpr float kNever = -std::numeric_limits<float>::infinity();
constexpr std::array<float, 64> kNevers = [] {
  std::array<float, 64> a{};
  a.fill(kNever);
  return a;
}();

}  // namespace

bool Constraint::mask(std::span<float> logits) {
  if (phase_ == Phase::Thinking) {
    for (int32_t id : trie_->end_tokens()) logits[static_cast<size_t>(id)] = kNever;
    return true;
  }
  if (dead_) return false;
  matcher_.allowed_tokens(allowed_);
  if (phase_ == Phase::MayThink) grammar::set_bit(allowed_, think_.open);
  if (std::all_of(allowed_.begin(), allowed_.end(), [](uint64_t w) { return w == 0; })) return false;
  // A word of the mask at a time: one all allowed is skipped, one all refused is copied over,
  // and in the rest only the refused ids are visited.
  for (size_t begin = 0; begin < logits.size(); begin += 64) {
    const size_t word = begin / 64;
    const uint64_t bits = word < allowed_.size() ? allowed_[word] : 0;
    if (bits == ~uint64_t{0}) continue;
    const size_t end = std::min(logits.size(), begin + 64);
    if (bits == 0) {  // NOTE(engine): a copy, in libc's vector stores; a fill loop is scalar at -O2
      std::memcpy(&logits[begin], kNevers.data(), (end - begin) * sizeof(float));
      continue;
    }
    for (uint64_t refused = ~bits; refused != 0; refused &= refused - 1) {
      const size_t id = begin + static_cast<size_t>(std::countr_zero(refused));
      if (id >= end) break;
      logits[id] = kNever;
    }
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
