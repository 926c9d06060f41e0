// Speculative decoding's drafts from a second, smaller model of the same vocabulary (the
// --draft-model of llama.cpp's speculative example and server): its greedy continuation of
// the generated text, from its own KV cache. The target checks the drafts as it checks prompt
// lookup's (engine/generate.cpp): a draft is kept only where the target draws the same token,
// so the output is the target's alone, token for token.
// Tested by tests/unit/engine/speculative_test.cpp.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/model.h"
#include "tokenizer/vocab.h"

namespace gufo::engine {

class ModelDrafter {
 public:
  explicit ModelDrafter(Session& draft) : draft_(&draft) {}

  // Up to `length` tokens that the draft model decodes greedily after `history` (the whole
  // context, oldest first). The draft's KV cache follows `history` lazily: what it holds
  // beyond the common prefix (rejected drafts, an earlier conversation) is rewound, and what
  // is new is evaluated in one batch. Fewer tokens where the draft's context runs out.
  Result<std::vector<int32_t>> propose(std::span<const int32_t> history, int32_t length);

 private:
  Session* draft_;
  std::vector<int32_t> evaluated_;  // the tokens in the draft's KV cache, in order
};

// The draft must tokenize as the target does: the same tokens with the same ids, and the
// same BOS and EOS. Errors name `draft_name` and what differs (both sizes, or the first id).
Status check_draft_vocab(const tokenizer::Vocab& target, const tokenizer::Vocab& draft, const std::string& draft_name);

}  // namespace gufo::engine
