// Drafts from a second model (see model_draft.h).
#include "engine/model_draft.h"

#include <algorithm>

namespace gufo::engine {

Result<std::vector<int32_t>> ModelDrafter::propose(std::span<const int32_t> history, int32_t length) {
  std::vector<int32_t> drafts;
  // Evaluating the history and all but the last draft fills history + length - 1 positions.
  const int64_t room = draft_->context_size() - static_cast<int64_t>(history.size()) + 1;
  length = static_cast<int32_t>(std::min<int64_t>(length, room));
  if (history.empty() || length < 1) return drafts;
  const auto differ = std::mismatch(evaluated_.begin(), evaluated_.end(), history.begin(), history.end());
  // The last token is evaluated again even where it is cached: its row gives the first draft.
  const auto common = std::min(static_cast<size_t>(differ.first - evaluated_.begin()), history.size() - 1);
  draft_->rewind(static_cast<int32_t>(common));
  evaluated_.resize(common);
  GUFO_ASSIGN_OR_RETURN(int32_t next, draft_->eval_greedy(history.subspan(common)));
  evaluated_.insert(evaluated_.end(), history.begin() + static_cast<std::ptrdiff_t>(common), history.end());
  drafts.push_back(next);
  while (static_cast<int32_t>(drafts.size()) < length) {
    GUFO_ASSIGN_OR_RETURN(next, draft_->eval_greedy(std::span<const int32_t>(&drafts.back(), 1)));
    evaluated_.push_back(drafts.back());
    drafts.push_back(next);
  }
  return drafts;
}

Status check_draft_vocab(const tokenizer::Vocab& target, const tokenizer::Vocab& draft, const std::string& draft_name) {
  if (draft.n_vocab() != target.n_vocab()) {
    return Error{draft_name + ": the draft model's vocabulary has " + std::to_string(draft.n_vocab()) +
                 " tokens, the model's " + std::to_string(target.n_vocab()) + ": a draft model must share it"};
  }
  const auto differ = std::mismatch(target.tokens.begin(), target.tokens.end(), draft.tokens.begin());
  if (differ.first != target.tokens.end()) {
    return Error{draft_name + ": token " + std::to_string(differ.first - target.tokens.begin()) +
                 " differs from the model's: a draft model must share its vocabulary"};
  }
  if (draft.bos_id != target.bos_id || draft.eos_id != target.eos_id) {
    return Error{draft_name + ": BOS/EOS ids " + std::to_string(draft.bos_id) + "/" + std::to_string(draft.eos_id) +
                 " differ from the model's " + std::to_string(target.bos_id) + "/" + std::to_string(target.eos_id)};
  }
  return {};
}

}  // namespace gufo::engine
