// Loading and validating a byte-level BPE vocab. See vocab.h.
// Tested by tests/unit/tokenizer/vocab_test.cpp.
#include "tokenizer/vocab.h"

#include "tokenizer/unicode.h"

namespace gufo::tokenizer {

namespace {

// NOTE(vocab): a sanity cap far above any real vocab (the largest are ~260k); it stops a
// hostile file from making us build maps of billions of entries.
constexpr size_t kMaxVocab = 4'000'000;

bool is_byte_mapped(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const DecodedChar c = decode_utf8(text, pos);
    if (!codepoint_to_byte(c.cp)) return false;
    pos += c.n_bytes;
  }
  return !text.empty();
}

}  // namespace

Result<Vocab> build_vocab(const VocabSpec& spec, const std::string& name) {
  const std::string prefix = name + ": ";
  if (spec.model != "gpt2") {
    return Error{prefix + "tokenizer.ggml.model: expected 'gpt2' (byte-level BPE), found '" + spec.model + "'"};
  }
  Vocab vocab;
  auto pre = pre_tokenizer_from_name(spec.pre);
  if (!pre.ok()) return Error{prefix + pre.error().message};
  vocab.pre = *pre;
  const size_t n = spec.tokens.size();
  if (n == 0 || n > kMaxVocab) {
    return Error{prefix + "tokenizer.ggml.tokens: expected 1.." + std::to_string(kMaxVocab) + " tokens, found " +
                 std::to_string(n)};
  }
  if (!spec.types.empty() && spec.types.size() != n) {
    return Error{prefix + "tokenizer.ggml.token_type: has " + std::to_string(spec.types.size()) +
                 " entries, tokenizer.ggml.tokens has " + std::to_string(n)};
  }
  vocab.tokens = spec.tokens;
  vocab.types.assign(n, TokenType::Normal);
  vocab.token_ids.reserve(n);
  for (size_t id = 0; id < n; ++id) {
    const std::string where = prefix + "token " + std::to_string(id) + " ('" + spec.tokens[id] + "')";
    if (!spec.types.empty()) {
      const int32_t type = spec.types[id];
      if (type < 0 || type > static_cast<int32_t>(TokenType::Byte)) {
        return Error{where + ": tokenizer.ggml.token_type " + std::to_string(type) +
                     " is not a llama.cpp token type (0..6)"};
      }
      vocab.types[id] = static_cast<TokenType>(type);
    }
    if (vocab.types[id] == TokenType::Normal && !is_byte_mapped(spec.tokens[id])) {
      return Error{where + ": a normal token must be non-empty GPT-2 byte-mapped text"};
    }
    if (vocab.types[id] == TokenType::Control || vocab.types[id] == TokenType::UserDefined) {
      if (spec.tokens[id].empty()) return Error{where + ": a special token must not be empty"};
    }
    // The first id wins for duplicate texts, as in llama.cpp.
    vocab.token_ids.emplace(spec.tokens[id], static_cast<int32_t>(id));
  }
  vocab.byte_token.assign(256, -1);
  for (int b = 0; b < 256; ++b) {
    std::string mapped;
    append_utf8(mapped, byte_to_codepoint(static_cast<uint8_t>(b)));
    const auto it = vocab.token_ids.find(mapped);
    if (it == vocab.token_ids.end() || vocab.types[it->second] != TokenType::Normal) {
      return Error{prefix + "tokenizer.ggml.tokens: no normal token for byte " + std::to_string(b) + " ('" + mapped +
                   "'); byte-level BPE needs all 256"};
    }
    vocab.byte_token[b] = it->second;
  }
  vocab.merges.reserve(spec.merges.size());
  for (size_t rank = 0; rank < spec.merges.size(); ++rank) {
    const std::string& merge = spec.merges[rank];
    const std::string where = prefix + "tokenizer.ggml.merges[" + std::to_string(rank) + "] ('" + merge + "')";
    const size_t space = merge.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == merge.size() ||
        merge.find(' ', space + 1) != std::string::npos) {
      return Error{where + ": expected two tokens separated by one space"};
    }
    const std::string_view left(merge.data(), space);
    const std::string_view right(merge.data() + space + 1, merge.size() - space - 1);
    const auto left_it = vocab.token_ids.find(left);
    const auto right_it = vocab.token_ids.find(right);
    const auto merged_it = vocab.token_ids.find(std::string(left) + std::string(right));
    if (left_it == vocab.token_ids.end() || right_it == vocab.token_ids.end()) {
      return Error{where + ": refers to a token not in tokenizer.ggml.tokens"};
    }
    if (merged_it == vocab.token_ids.end()) {
      return Error{where + ": the merged token is not in tokenizer.ggml.tokens"};
    }
    // The first (best-ranked) merge of a pair wins.
    vocab.merges.emplace(Vocab::pair_key(left_it->second, right_it->second),
                         Merge{static_cast<int32_t>(rank), merged_it->second});
  }
  const auto check_id = [&](int64_t id, const char* key, int32_t& out) -> Status {
    if (id < 0) return ok_status();
    if (id >= static_cast<int64_t>(n)) {
      return Error{prefix + key + ": id " + std::to_string(id) + " is out of range (n_vocab " + std::to_string(n) +
                   ")"};
    }
    out = static_cast<int32_t>(id);
    return ok_status();
  };
  GUFO_RETURN_IF_ERROR(check_id(spec.bos_id, "tokenizer.ggml.bos_token_id", vocab.bos_id));
  GUFO_RETURN_IF_ERROR(check_id(spec.eos_id, "tokenizer.ggml.eos_token_id", vocab.eos_id));
  GUFO_RETURN_IF_ERROR(check_id(spec.pad_id, "tokenizer.ggml.padding_token_id", vocab.pad_id));
  if (spec.add_bos && vocab.bos_id < 0) {
    return Error{prefix + "tokenizer.ggml.add_bos_token is true but there is no bos_token_id"};
  }
  if (spec.add_eos && vocab.eos_id < 0) {
    return Error{prefix + "tokenizer.ggml.add_eos_token is true but there is no eos_token_id"};
  }
  vocab.add_bos = spec.add_bos;
  vocab.add_eos = spec.add_eos;
  return vocab;
}

Result<Vocab> load_vocab(const gguf::File& file) {
  VocabSpec spec;
  GUFO_ASSIGN_OR_RETURN(std::string_view model, file.get_string("tokenizer.ggml.model"));
  spec.model = std::string(model);
  GUFO_ASSIGN_OR_RETURN(std::string_view pre, file.get_string("tokenizer.ggml.pre"));
  spec.pre = std::string(pre);
  GUFO_ASSIGN_OR_RETURN(auto tokens, file.get_array_of<std::string>("tokenizer.ggml.tokens"));
  spec.tokens.assign(tokens.begin(), tokens.end());
  if (file.has("tokenizer.ggml.token_type")) {
    GUFO_ASSIGN_OR_RETURN(auto types, file.get_array_of<int32_t>("tokenizer.ggml.token_type"));
    spec.types.assign(types.begin(), types.end());
  }
  if (file.has("tokenizer.ggml.merges")) {
    GUFO_ASSIGN_OR_RETURN(auto merges, file.get_array_of<std::string>("tokenizer.ggml.merges"));
    spec.merges.assign(merges.begin(), merges.end());
  }
  const auto optional_id = [&](const char* key, int64_t& out) -> Status {
    if (!file.has(key)) return ok_status();
    GUFO_ASSIGN_OR_RETURN(uint32_t id, file.get_u32(key));
    out = id;
    return ok_status();
  };
  GUFO_RETURN_IF_ERROR(optional_id("tokenizer.ggml.bos_token_id", spec.bos_id));
  GUFO_RETURN_IF_ERROR(optional_id("tokenizer.ggml.eos_token_id", spec.eos_id));
  GUFO_RETURN_IF_ERROR(optional_id("tokenizer.ggml.padding_token_id", spec.pad_id));
  if (file.has("tokenizer.ggml.add_bos_token")) {
    GUFO_ASSIGN_OR_RETURN(spec.add_bos, file.get_bool("tokenizer.ggml.add_bos_token"));
  }
  if (file.has("tokenizer.ggml.add_eos_token")) {
    GUFO_ASSIGN_OR_RETURN(spec.add_eos, file.get_bool("tokenizer.ggml.add_eos_token"));
  }
  return build_vocab(spec, file.name());
}

Result<std::string> special_token_text(const gguf::File& file, std::string_view id_key) {
  if (!file.has(id_key)) return std::string();
  GUFO_ASSIGN_OR_RETURN(uint32_t id, file.get_u32(id_key));
  GUFO_ASSIGN_OR_RETURN(const gguf::Array* tokens, file.get_array("tokenizer.ggml.tokens"));
  const std::vector<std::string>* texts = tokens->get_if<std::string>();
  if (texts == nullptr) return Error{file.name() + ": tokenizer.ggml.tokens: expected an array of strings"};
  if (id >= texts->size()) {
    return Error{file.name() + ": " + std::string(id_key) + " " + std::to_string(id) + " is not a token id (" +
                 std::to_string(texts->size()) + " tokens)"};
  }
  return (*texts)[id];
}

}  // namespace gufo::tokenizer
