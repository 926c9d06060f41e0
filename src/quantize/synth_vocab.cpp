// The synthetic tokenizer (see synth_vocab.h). Token types are llama.cpp's (1 normal,
// 3 control, 5 unused); the byte map is GPT-2's (tokenizer/unicode.h).
// Tested by tests/unit/quantize/synth_test.cpp.
#include "quantize/synth_vocab.h"

#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "tokenizer/unicode.h"

namespace gufo::quantize {
namespace {

constexpr int32_t kNormal = 1;
constexpr int32_t kControl = 3;
constexpr int32_t kUnused = 5;

struct SpecialToken {
  uint32_t id;
  std::string text;
};

// The 256 byte values, most common in text first, so the first merges pair common bytes.
std::vector<uint8_t> bytes_by_priority() {
  std::vector<uint8_t> order;
  const auto add_range = [&](int first, int last) {
    for (int b = first; b <= last; ++b) order.push_back(static_cast<uint8_t>(b));
  };
  add_range('a', 'z');
  order.push_back(' ');
  add_range('A', 'Z');
  add_range('0', '9');
  std::vector<bool> taken(256, false);
  for (uint8_t b : order) taken[b] = true;
  for (int b = 0; b < 256; ++b) {
    if (!taken[static_cast<size_t>(b)]) order.push_back(static_cast<uint8_t>(b));
  }
  return order;
}

std::string byte_token(uint8_t byte) {
  std::string text;
  tokenizer::append_utf8(text, tokenizer::byte_to_codepoint(byte));
  return text;
}

}  // namespace

void add_synth_tokenizer(gguf::Writer& writer, const convert::HfConfig& config) {
  const bool is_llama = config.arch == convert::Arch::Llama;
  std::vector<SpecialToken> specials;
  uint32_t bos_id = 0;
  uint32_t eos_id = 0;
  std::string chat_template;
  if (is_llama) {
    // Llama 3: 256 special ids from 128000 (of 128256), most of them reserved.
    for (uint32_t id = 128000; id < 128256; ++id) {
      specials.push_back({id, "<|reserved_special_token_" + std::to_string(id - 128000) + "|>"});
    }
    specials[0].text = "<|begin_of_text|>";
    specials[1].text = "<|end_of_text|>";
    specials[6].text = "<|start_header_id|>";
    specials[7].text = "<|end_header_id|>";
    specials[9].text = "<|eot_id|>";
    bos_id = 128000;
    eos_id = 128009;
    chat_template =
        "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
        "'<|end_header_id|>\n\n' + message['content'] + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
        "{% endif %}";
  } else {
    specials = {{151643, "<|endoftext|>"}, {151644, "<|im_start|>"}, {151645, "<|im_end|>"}};
    bos_id = 151643;
    eos_id = 151645;
    chat_template =
        "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + "
        "message['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";
  }
  // NOTE(synth): the ids above are the real ones for the real vocab size (151936, 128256);
  // a smaller vocab (tests) keeps each special token's distance from the end.
  const uint32_t real_n_vocab = is_llama ? 128256 : 151936;
  const uint32_t n_vocab = config.n_vocab;
  GUFO_CHECK(n_vocab >= kMinSynthVocab && real_n_vocab - specials.front().id < n_vocab);
  for (SpecialToken& special : specials) special.id = n_vocab - (real_n_vocab - special.id);
  bos_id = n_vocab - (real_n_vocab - bos_id);
  eos_id = n_vocab - (real_n_vocab - eos_id);
  const uint32_t n_normal = specials.front().id;

  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<std::string> merges;
  tokens.reserve(n_vocab);
  types.reserve(n_vocab);
  const std::vector<uint8_t> order = bytes_by_priority();
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(byte_token(static_cast<uint8_t>(b)));
    types.push_back(kNormal);
  }
  // Pairs in "shells": every pair of the k most common bytes before any pair with byte k+1.
  std::vector<std::pair<uint8_t, uint8_t>> pairs;
  for (size_t k = 0; k < order.size(); ++k) {
    for (size_t i = 0; i <= k; ++i) {
      pairs.emplace_back(order[i], order[k]);
      if (i != k) pairs.emplace_back(order[k], order[i]);
    }
  }
  const auto add_merge = [&](const std::string& left, const std::string& right) {
    merges.push_back(left + " " + right);
    tokens.push_back(left + right);
    types.push_back(kNormal);
  };
  for (const auto& [first, second] : pairs) {
    if (tokens.size() >= n_normal) break;
    add_merge(byte_token(first), byte_token(second));
  }
  // Then three-byte tokens: one of the first 4096 pairs followed by a common byte.
  constexpr size_t kTriplePairs = 4096;
  for (size_t t = 0; tokens.size() < n_normal && t < kTriplePairs * order.size(); ++t) {
    const auto& [first, second] = pairs[t % kTriplePairs];
    add_merge(byte_token(first) + byte_token(second), byte_token(order[t / kTriplePairs]));
  }
  while (tokens.size() < n_normal) {  // only for vocabs larger than the table's
    tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
    types.push_back(kUnused);
  }
  for (const SpecialToken& special : specials) {
    while (tokens.size() < special.id) {
      tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
      types.push_back(kUnused);
    }
    tokens.push_back(special.text);
    types.push_back(kControl);
  }
  while (tokens.size() < n_vocab) {  // llama.cpp pads to the embedding rows the same way
    tokens.push_back("[PAD" + std::to_string(tokens.size()) + "]");
    types.push_back(kUnused);
  }

  writer.set("tokenizer.ggml.model", gguf::Value::string("gpt2"));
  writer.set("tokenizer.ggml.pre", gguf::Value::string(is_llama ? "llama-bpe" : "qwen2"));
  writer.set("tokenizer.ggml.tokens", gguf::Value::array(gguf::Array(std::move(tokens))));
  writer.set("tokenizer.ggml.token_type", gguf::Value::array(gguf::Array(std::move(types))));
  writer.set("tokenizer.ggml.merges", gguf::Value::array(gguf::Array(std::move(merges))));
  writer.set("tokenizer.ggml.bos_token_id", gguf::Value::u32(bos_id));
  writer.set("tokenizer.ggml.eos_token_id", gguf::Value::u32(eos_id));
  if (!is_llama) writer.set("tokenizer.ggml.padding_token_id", gguf::Value::u32(bos_id));
  writer.set("tokenizer.ggml.add_bos_token", gguf::Value::boolean(is_llama));
  writer.set("tokenizer.chat_template", gguf::Value::string(chat_template));
}

}  // namespace gufo::quantize
