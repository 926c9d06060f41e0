// Encoding (special tokens, pre-tokenizer, BPE with a priority queue) and decoding.
// See tokenizer.h. Tested by tests/unit/tokenizer/tokenizer_test.cpp and the parity test.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <queue>

#include "tokenizer/pretokenize.h"
#include "tokenizer/unicode.h"

namespace gufo::tokenizer {

Tokenizer::Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {
  for (int32_t id = 0; id < vocab_.n_vocab(); ++id) {
    const TokenType type = vocab_.types[id];
    if (type == TokenType::Control || type == TokenType::UserDefined) {
      special_ids_.push_back(id);
      special_first_byte_[static_cast<uint8_t>(vocab_.tokens[id][0])] = true;
    }
  }
  // Longest first, so "<|im_start|>" wins over a shorter token that is its prefix.
  std::stable_sort(special_ids_.begin(), special_ids_.end(),
                   [&](int32_t a, int32_t b) { return vocab_.tokens[a].size() > vocab_.tokens[b].size(); });
}

Result<Tokenizer> Tokenizer::load(const gguf::File& file) {
  GUFO_ASSIGN_OR_RETURN(Vocab vocab, load_vocab(file));
  return Tokenizer(std::move(vocab));
}

// Splits out special tokens leftmost-longest (as Hugging Face's added-token matcher does),
// then runs the normalizer, pre-tokenizer and BPE on the text between them. The scan tries
// the candidate list only at bytes some special token starts with; a trie would make it
// linear in the worst case (text full of '<' against Llama 3's 256 specials).
std::vector<int32_t> Tokenizer::encode(std::string_view text, bool parse_special) const {
  std::vector<int32_t> out;
  size_t plain_begin = 0;
  for (size_t pos = 0; pos < text.size();) {
    int32_t found = -1;
    if (special_first_byte_[static_cast<uint8_t>(text[pos])]) {
      for (int32_t id : special_ids_) {
        if (!parse_special && vocab_.types[id] == TokenType::Control) continue;
        if (text.substr(pos).starts_with(vocab_.tokens[id])) {
          found = id;
          break;
        }
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    encode_plain(text.substr(plain_begin, pos - plain_begin), out);
    out.push_back(found);
    pos += vocab_.tokens[found].size();
    plain_begin = pos;
  }
  encode_plain(text.substr(plain_begin), out);
  return out;
}

void Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  // NOTE(normalize): Qwen2's tokenizer.json normalizes with NFC (Llama 3's has no
  // normalizer); hf_import refuses any other pairing, so the pre-tokenizer name implies it.
  // Special tokens are not normalized, as in Hugging Face (normalized: false).
  if (vocab_.pre == PreTokenizer::Qwen2) {
    const std::string normalized = nfc(text);
    for (std::string_view piece : pre_tokenize(vocab_.pre, normalized)) encode_piece(piece, out);
    return;
  }
  for (std::string_view piece : pre_tokenize(vocab_.pre, text)) encode_piece(piece, out);
}

// BPE over one piece: start from one token per byte, then repeatedly merge the adjacent
// pair with the lowest rank (leftmost on ties). A min-heap of candidate pairs with lazy
// invalidation makes this O(n log n) instead of rescanning all pairs after each merge.
void Tokenizer::encode_piece(std::string_view piece, std::vector<int32_t>& out) const {
  // NOTE(bpe): Llama 3's tokenizer.json sets "ignore_merges": a piece that is a whole token
  // is taken as is, even where merging by rank would end elsewhere. llama.cpp keys this on
  // the pre-tokenizer too; Qwen2's tokenizer.json leaves it off.
  if (vocab_.pre == PreTokenizer::Llama3) {
    const std::string mapped = bytes_to_mapped(piece);
    if (const auto it = vocab_.token_ids.find(mapped);
        it != vocab_.token_ids.end() && vocab_.types[it->second] == TokenType::Normal) {
      out.push_back(it->second);
      return;
    }
  }
  const int n = static_cast<int>(piece.size());
  std::vector<int32_t> ids(n);
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) {
    ids[i] = vocab_.byte_token[static_cast<uint8_t>(piece[i])];
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Candidate {
    int32_t rank;
    int left;
    int32_t left_id, right_id;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto push_pair = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    const auto it = vocab_.merges.find(Vocab::pair_key(ids[left], ids[next[left]]));
    if (it != vocab_.merges.end()) heap.push({it->second.rank, left, ids[left], ids[next[left]]});
  };
  for (int i = 0; i + 1 < n; ++i) push_pair(i);
  while (!heap.empty()) {
    const Candidate top = heap.top();
    heap.pop();
    const int left = top.left;
    const int right = next[left];
    // Stale: a neighbour merged since this pair was queued.
    if (ids[left] < 0 || right < 0 || ids[left] != top.left_id || ids[right] != top.right_id) {
      continue;
    }
    ids[left] = vocab_.merges.at(Vocab::pair_key(top.left_id, top.right_id)).result;
    ids[right] = -1;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    push_pair(prev[left]);
    push_pair(left);
  }
  for (int i = 0; i >= 0 && i < n; i = next[i]) out.push_back(ids[i]);
}

Result<std::string> Tokenizer::token_bytes(int32_t id) const {
  if (id < 0 || id >= vocab_.n_vocab()) {
    return Error{"token id " + std::to_string(id) + " is out of range (n_vocab " + std::to_string(vocab_.n_vocab()) +
                 ")"};
  }
  const std::string& text = vocab_.tokens[id];
  if (vocab_.types[id] != TokenType::Normal) return text;
  std::string bytes;
  for (size_t pos = 0; pos < text.size();) {
    const DecodedChar c = decode_utf8(text, pos);
    bytes += static_cast<char>(*codepoint_to_byte(c.cp));  // checked by build_vocab
    pos += c.n_bytes;
  }
  return bytes;
}

Result<std::string> Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  for (int32_t id : ids) {
    GUFO_ASSIGN_OR_RETURN(std::string bytes, token_bytes(id));
    out += bytes;
  }
  return out;
}

Result<std::string> Detokenizer::push(int32_t id) {
  GUFO_ASSIGN_OR_RETURN(std::string bytes, tokenizer_->token_bytes(id));
  pending_ += bytes;
  const size_t ready = complete_utf8_prefix(pending_);
  std::string out = pending_.substr(0, ready);
  pending_.erase(0, ready);
  return out;
}

std::string Detokenizer::finish() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace gufo::tokenizer
