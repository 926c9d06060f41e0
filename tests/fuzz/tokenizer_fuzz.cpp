// libFuzzer target for the tokenizer: encodes arbitrary bytes with the real Qwen3 and Llama 3
// vocabularies (GGUFs named by GUFO_FUZZ_VOCABS, colon-separated; run_fuzz.sh converts them)
// and checks what must hold for any input: ids in range, control tokens only when asked,
// decode(encode(x)) == x (for Qwen, which normalizes: a fixed point), and streaming decode ==
// one-shot decode.
// Run: tests/fuzz/run_fuzz.sh SECONDS (asan preset).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

using gufo::tokenizer::Detokenizer;
using gufo::tokenizer::PreTokenizer;
using gufo::tokenizer::Tokenizer;
using gufo::tokenizer::TokenType;

[[noreturn]] void fail(const char* what, std::string_view input) {
  std::fprintf(stderr, "tokenizer_fuzz: invariant broken: %s (input of %zu bytes)\n", what, input.size());
  std::abort();
}

gufo::Result<Tokenizer> load_tokenizer(const std::string& path) {
  GUFO_ASSIGN_OR_RETURN(gufo::gguf::File file, gufo::gguf::File::open(path));
  return Tokenizer::load(file);
}

std::vector<std::unique_ptr<Tokenizer>> load_vocabs() {
  const char* paths = std::getenv("GUFO_FUZZ_VOCABS");
  if (paths == nullptr || *paths == '\0') {
    std::fprintf(stderr, "tokenizer_fuzz: set GUFO_FUZZ_VOCABS=a.gguf:b.gguf (run_fuzz.sh does)\n");
    std::exit(2);
  }
  std::vector<std::unique_ptr<Tokenizer>> tokenizers;
  const std::string_view list = paths;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t end = std::min(list.find(':', start), list.size());
    const std::string path(list.substr(start, end - start));
    auto tokenizer = load_tokenizer(path);
    if (!tokenizer.ok()) {
      std::fprintf(stderr, "tokenizer_fuzz: %s\n", tokenizer.error().message.c_str());
      std::exit(2);
    }
    tokenizers.push_back(std::make_unique<Tokenizer>(std::move(*tokenizer)));
    start = end + 1;
  }
  return tokenizers;
}

const std::vector<std::unique_ptr<Tokenizer>>& tokenizers() {
  static const std::vector<std::unique_ptr<Tokenizer>> loaded = load_vocabs();
  return loaded;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tokenizers();  // fail at start-up, not on the first input
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the vocabulary and whether control tokens are parsed.
  const Tokenizer& tok = *tokenizers()[data[0] % tokenizers().size()];
  const bool parse_special = (data[0] & 0x80) != 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);

  const std::vector<int32_t> ids = tok.encode(text, parse_special);
  for (int32_t id : ids) {
    if (id < 0 || id >= tok.vocab().n_vocab()) fail("id out of range", text);
    if (!parse_special && tok.vocab().types[id] == TokenType::Control) {
      fail("control token without parse_special", text);
    }
  }
  auto decoded = tok.decode(ids);
  if (!decoded.ok()) fail("decode of encode's ids failed", text);
  if (tok.vocab().pre == PreTokenizer::Qwen2) {
    // NOTE(fuzz): Qwen normalizes each run of text between special tokens to NFC on its own
    // (as Hugging Face does: added tokens are split out before the normalizer), so the round
    // trip gives that back, not nfc(x) of the whole. What must hold: it is a fixed point.
    auto again = tok.decode(tok.encode(*decoded, parse_special));
    if (!again.ok() || *again != *decoded) fail("decode(encode(y)) != y for y = decode(encode(x))", text);
  } else if (*decoded != text) {
    fail("decode(encode(x)) != x", text);
  }

  Detokenizer stream(tok);
  std::string streamed;
  for (int32_t id : ids) {
    auto piece = stream.push(id);
    if (!piece.ok()) fail("streaming decode failed", text);
    streamed += *piece;
  }
  streamed += stream.finish();
  if (streamed != *decoded) fail("streaming decode != one-shot decode", text);
  return 0;
}
