// Tokenizer: text <-> token ids for a byte-level BPE Vocab: special-token splitting, the
// pre-tokenizer, then BPE merges by rank; decoding maps GPT-2 byte chars back to bytes.
// Tested by tests/unit/tokenizer/tokenizer_test.cpp and tests/js/tokenizer_parity.test.mjs.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "gguf/file.h"
#include "tokenizer/vocab.h"

namespace gufo::tokenizer {

class Tokenizer {
 public:
  explicit Tokenizer(Vocab vocab);
  static Result<Tokenizer> load(const gguf::File& file);

  const Vocab& vocab() const { return vocab_; }

  // Ids for `text`, without BOS (callers add vocab().bos_id when vocab().add_bos).
  // User-defined tokens are always matched in the text, as llama.cpp and Hugging Face do;
  // control tokens (<|im_start|>, ...) only when `parse_special`, else they are plain text.
  std::vector<int32_t> encode(std::string_view text, bool parse_special) const;

  // The bytes of one token: byte-mapped text decoded for normal tokens; raw text for control
  // and user-defined ones. An id out of range is an error.
  Result<std::string> token_bytes(int32_t id) const;
  // All tokens' bytes concatenated (may end in the middle of a UTF-8 sequence).
  Result<std::string> decode(std::span<const int32_t> ids) const;

 private:
  void encode_piece(std::string_view piece, std::vector<int32_t>& out) const;
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;

  Vocab vocab_;
  std::vector<int32_t> special_ids_;            // control and user-defined tokens, longest text first
  std::array<bool, 256> special_first_byte_{};  // bytes some special token starts with
};

// Streaming decoder: feed ids as they are generated and get back only complete UTF-8; an
// incomplete sequence at the end is held back until the next ids complete it (or finish()).
class Detokenizer {
 public:
  explicit Detokenizer(const Tokenizer& tokenizer) : tokenizer_(&tokenizer) {}
  Result<std::string> push(int32_t id);
  // Whatever is still held back (an incomplete sequence, passed through as is).
  std::string finish();

 private:
  const Tokenizer* tokenizer_;
  std::string pending_;
};

}  // namespace gufo::tokenizer
