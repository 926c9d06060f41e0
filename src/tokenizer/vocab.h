// Vocab: a byte-level BPE vocabulary loaded from GGUF metadata with llama.cpp's key names
// (tokenizer.ggml.*), validated in full so the encoder can trust every id and merge.
// Tested by tests/unit/tokenizer/vocab_test.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "gguf/file.h"
#include "tokenizer/pretokenize.h"

namespace gufo::tokenizer {

// NOTE(vocab): llama.cpp's llama_token_type values (tokenizer.ggml.token_type).
enum class TokenType : int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

struct Merge {
  int32_t rank = 0;
  int32_t result = 0;  // the id of the merged token
};

struct Vocab {
  PreTokenizer pre = PreTokenizer::Qwen2;
  std::vector<std::string> tokens;  // normal tokens in GPT-2 byte-mapped form; others raw
  std::vector<TokenType> types;
  std::unordered_map<std::string, int32_t, gguf::StringHash, std::equal_to<>> token_ids;
  std::unordered_map<uint64_t, Merge> merges;  // key: pair_key(left id, right id)
  std::vector<int32_t> byte_token;             // [256] the token of each single byte
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t pad_id = -1;
  bool add_bos = false;
  // EOS closes every input of an embedding model that asks for it (Qwen3-Embedding pools the
  // last token, which must be <|endoftext|>); generation never appends it.
  bool add_eos = false;

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
};

// The fields a vocab is made of, before validation (from GGUF, or built by tests).
struct VocabSpec {
  std::string model = "gpt2";
  std::string pre = "qwen2";
  std::vector<std::string> tokens;
  std::vector<int32_t> types;  // empty: all normal
  std::vector<std::string> merges;
  int64_t bos_id = -1, eos_id = -1, pad_id = -1;
  bool add_bos = false;
  bool add_eos = false;
};

// Validates `spec`; errors start with `name` and name the key and index at fault.
Result<Vocab> build_vocab(const VocabSpec& spec, const std::string& name);
// Reads the tokenizer.ggml.* keys of `file` and validates them.
Result<Vocab> load_vocab(const gguf::File& file);

// The text of the token that `id_key` (e.g. tokenizer.ggml.bos_token_id) names, without
// building the whole vocabulary (chat templates need only BOS/EOS); "" when the key is absent.
Result<std::string> special_token_text(const gguf::File& file, std::string_view id_key);

}  // namespace gufo::tokenizer
