// Hugging Face tokenizer import: reads a model folder's tokenizer.json (BPE model, added
// tokens, the pre-tokenizer's Split regex) and tokenizer_config.json (bos/eos, add_bos_token,
// chat_template) into llama.cpp's tokenizer.ggml.* keys for a vocab-only GGUF.
// Tested by tests/unit/tokenizer/hf_import_test.cpp and tests/js/tokenizer_parity.test.mjs.
#pragma once

#include <string>

#include "core/result.h"
#include "gguf/writer.h"

namespace gufo::tokenizer {

// The metadata of a vocab-only GGUF for the tokenizer in `hf_dir`, validated with
// build_vocab before it is returned. Errors name the file and the JSON field.
Result<gguf::Writer> import_hf_tokenizer(const std::string& hf_dir);

}  // namespace gufo::tokenizer
