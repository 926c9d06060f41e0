// A synthetic byte-level BPE tokenizer for `gufo synth` models: the 256 GPT-2 byte tokens,
// then two- and three-character tokens built by merges (so text tokenizes to fewer tokens
// than bytes, like a real vocab), the model family's special tokens at their real ids, and
// unused [PAD<id>] tokens up to n_vocab. Loadable by Gufo's tokenizer and llama.cpp's.
// Tested by tests/unit/quantize/synth_test.cpp (the file loads as a tokenizer).
#pragma once

#include "convert/hf_config.h"
#include "gguf/writer.h"

namespace gufo::quantize {

// The smallest vocabulary a synthetic tokenizer may have: the byte tokens, some merges and
// the specials of either family.
inline constexpr uint32_t kMinSynthVocab = 1024;

// Sets the tokenizer.* keys for a model of `config` (qwen3: pre "qwen2", ChatML specials;
// llama: pre "llama-bpe", Llama 3 specials).
void add_synth_tokenizer(gguf::Writer& writer, const convert::HfConfig& config);

}  // namespace gufo::quantize
