// A vocabulary as a trie of its tokens' bytes, built once per model and shared by every
// request: a token mask walks it from a matcher state, trying each byte once for all the
// tokens that share a prefix. Tokens are kept in byte order, which is the trie's depth-first
// order, so the tokens below a node are one run of tokens_in_order(). Nodes with many tokens
// below carry a summary of the bytes that follow them (which ASCII bytes, whether any other,
// whether every token is UTF-8), so that a mask can take a whole subtree at once where the
// matcher state would take any of those bytes and come back to itself (the inside of a
// string, free text), and an index of the tokens by the ASCII bytes they hold, so that a
// looping state can take a subtree but for the few tokens that hold a byte it does not loop
// on, those tried one by one. Tested by tests/unit/grammar/token_trie_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gufo::grammar {

// What the tokens below a trie node hold after the node's prefix.
struct BytesBelow {
  std::array<uint64_t, 2> ascii = {0, 0};  // bit b: some token has ASCII byte b there
  bool non_ascii = false;                  // some token has a byte >= 0x80 there
  bool utf8 = true;                        // every token, whole, is_utf8_prefix()
  uint8_t depth = 0;                       // the most bytes a token has past the node (at most 255)
};

class TokenTrie {
 public:
  struct Node {
    uint32_t first_child = 0;     // children are nodes first_child .. first_child + n_children - 1
    uint32_t n_children = 0;      // (in byte order)
    uint32_t first_token = 0;     // the node's own tokens: tokens_in_order()[first_token .. + n_tokens)
    uint32_t end_token = 0;       // the tokens of its subtree: [first_token, end_token)
    uint32_t below = kNoSummary;  // index into bytes_below(), for nodes with many tokens below
    uint16_t n_tokens = 0;
    uint8_t byte = 0;  // the byte that leads here from the parent
  };
  static constexpr uint32_t kNoSummary = ~uint32_t{0};

  // token_bytes[id]: what token id stands for ("" for tokens a grammar never allows);
  // end_tokens: those that end a generation (allowed once the grammar is complete).
  TokenTrie(const std::vector<std::string>& token_bytes, std::vector<int32_t> end_tokens);

  int32_t n_vocab() const { return n_vocab_; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  const std::string& bytes(int32_t token) const { return bytes_[static_cast<size_t>(token)]; }
  const std::vector<Node>& nodes() const { return nodes_; }              // nodes()[0]: the empty prefix
  const std::vector<int32_t>& tokens_in_order() const { return ends_; }  // the tokens with bytes
  // The bytes of tokens_in_order()[position], kept in that order (one buffer: the tokens a mask
  // tries one by one come in order, and read memory in order).
  std::string_view bytes_at(uint32_t position) const {
    return std::string_view(ordered_bytes_)
        .substr(ordered_at_[position], ordered_at_[position + 1] - ordered_at_[position]);
  }
  const BytesBelow& bytes_below(const Node& node) const { return below_[node.below]; }
  // Where in tokens_in_order() the tokens holding ASCII byte `byte` are (ascending), and those
  // that are not is_utf8_prefix(): what a looping state may have to look at one by one.
  const std::vector<uint32_t>& positions_with(uint8_t byte) const { return with_byte_[byte]; }
  const std::vector<uint32_t>& positions_not_utf8() const { return not_utf8_; }
  const std::vector<uint32_t>& positions_non_ascii() const { return non_ascii_; }  // a byte >= 0x80
  // Bit id % 64 of word id / 64 set for each token with bytes (tokens_in_order()).
  const std::vector<uint64_t>& token_bits() const { return token_bits_; }

 private:
  // NOTE(grammar): a summary costs 24 bytes; one token below is as cheap to walk as to read.
  static constexpr uint32_t kSummaryMinTokens = 2;
  void summarize();
  void index_bytes();

  std::vector<Node> nodes_;
  std::vector<int32_t> ends_;
  std::vector<BytesBelow> below_;
  std::vector<uint64_t> token_bits_;
  std::array<std::vector<uint32_t>, 128> with_byte_;
  std::vector<uint32_t> not_utf8_;
  std::vector<uint32_t> non_ascii_;
  std::vector<std::string> bytes_;
  std::string ordered_bytes_;         // the tokens' bytes in tokens_in_order()
  std::vector<uint32_t> ordered_at_;  // where each starts in ordered_bytes_, and the end
  std::vector<int32_t> end_tokens_;
  int32_t n_vocab_ = 0;
};

}  // namespace gufo::grammar
