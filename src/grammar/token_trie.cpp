// TokenTrie (see token_trie.h).
#include "grammar/token_trie.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "grammar/utf8_prefix.h"

namespace gufo::grammar {

TokenTrie::TokenTrie(const std::vector<std::string>& token_bytes, std::vector<int32_t> end_tokens)
    : bytes_(token_bytes), end_tokens_(std::move(end_tokens)), n_vocab_(static_cast<int32_t>(token_bytes.size())) {
  // Tokens in byte order; then each node's children are the distinct next bytes of a run of
  // tokens that share its prefix, laid out breadth first so that siblings are contiguous. A
  // node's run is its subtree's tokens in depth-first order (a prefix sorts first).
  ends_.resize(token_bytes.size());
  std::iota(ends_.begin(), ends_.end(), 0);
  ends_.erase(std::remove_if(ends_.begin(), ends_.end(), [&](int32_t id) { return token_bytes[id].empty(); }),
              ends_.end());
  std::stable_sort(ends_.begin(), ends_.end(), [&](int32_t a, int32_t b) { return token_bytes[a] < token_bytes[b]; });
  token_bits_.assign((token_bytes.size() + 63) / 64, 0);
  for (const int32_t id : ends_) token_bits_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
  index_bytes();
  size_t total_bytes = 0;
  for (const int32_t id : ends_) total_bytes += token_bytes[static_cast<size_t>(id)].size();
  ordered_bytes_.reserve(total_bytes);
  ordered_at_.reserve(ends_.size() + 1);
  for (const int32_t id : ends_) {
    ordered_at_.push_back(static_cast<uint32_t>(ordered_bytes_.size()));
    ordered_bytes_ += token_bytes[static_cast<size_t>(id)];
  }
  ordered_at_.push_back(static_cast<uint32_t>(ordered_bytes_.size()));
  struct Pending {
    uint32_t node;
    uint32_t begin, end;  // the run of ends_ below this node
    uint32_t depth;
  };
  nodes_.push_back(Node{});
  std::vector<Pending> queue = {{0, 0, static_cast<uint32_t>(ends_.size()), 0}};
  for (size_t q = 0; q < queue.size(); ++q) {
    const Pending p = queue[q];
    uint32_t i = p.begin;
    nodes_[p.node].first_token = p.begin;
    nodes_[p.node].end_token = p.end;
    while (i < p.end && token_bytes[ends_[i]].size() == p.depth) {
      ++i;
      ++nodes_[p.node].n_tokens;  // distinct ids with equal bytes: few (uint16 is plenty)
    }
    nodes_[p.node].first_child = static_cast<uint32_t>(nodes_.size());
    while (i < p.end) {
      const char byte = token_bytes[ends_[i]][p.depth];
      uint32_t j = i;
      while (j < p.end && token_bytes[ends_[j]][p.depth] == byte) ++j;
      const auto child = static_cast<uint32_t>(nodes_.size());
      nodes_.push_back(Node{.byte = static_cast<uint8_t>(byte)});
      ++nodes_[p.node].n_children;
      queue.push_back({child, i, j, p.depth + 1});
      i = j;
    }
  }
  summarize();
}

void TokenTrie::index_bytes() {
  for (uint32_t position = 0; position < ends_.size(); ++position) {
    const std::string& token = bytes_[static_cast<size_t>(ends_[position])];
    std::array<bool, 128> held{};
    bool non_ascii = false;
    for (const char c : token) {
      const auto byte = static_cast<uint8_t>(c);
      non_ascii = non_ascii || byte >= 0x80;
      if (byte < 0x80 && !held[byte]) {
        held[byte] = true;
        with_byte_[byte].push_back(position);
      }
    }
    if (non_ascii) non_ascii_.push_back(position);
    if (!is_utf8_prefix(token)) not_utf8_.push_back(position);
  }
}

// Bottom up (children come after their parent in the breadth-first layout): a node holds
// what its children's edges and subtrees hold.
void TokenTrie::summarize() {
  std::vector<bool> utf8(ends_.size(), true);
  for (const uint32_t position : not_utf8_) utf8[position] = false;
  std::vector<BytesBelow> all(nodes_.size());
  for (size_t n = nodes_.size(); n-- > 0;) {
    BytesBelow& below = all[n];
    for (uint32_t c = nodes_[n].first_child; c < nodes_[n].first_child + nodes_[n].n_children; ++c) {
      const Node& child = nodes_[c];
      if (child.byte >= 0x80) {
        below.non_ascii = true;
      } else {
        below.ascii[child.byte >> 6] |= uint64_t{1} << (child.byte & 63);
      }
      below.ascii[0] |= all[c].ascii[0];
      below.ascii[1] |= all[c].ascii[1];
      below.non_ascii = below.non_ascii || all[c].non_ascii;
      below.utf8 = below.utf8 && all[c].utf8;
      below.depth = static_cast<uint8_t>(std::max<uint32_t>(below.depth, std::min<uint32_t>(all[c].depth + 1u, 255)));
      for (uint32_t i = child.first_token; i < child.first_token + child.n_tokens; ++i)
        below.utf8 = below.utf8 && utf8[i];
    }
  }
  for (size_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].end_token - nodes_[n].first_token - nodes_[n].n_tokens < kSummaryMinTokens) continue;
    nodes_[n].below = static_cast<uint32_t>(below_.size());
    below_.push_back(all[n]);
  }
}

}  // namespace gufo::grammar
