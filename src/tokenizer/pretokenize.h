// Pre-tokenizers: split text into the pieces BPE runs on, as the Split regex of a
// tokenizer.json would, written as a hand scanner (no std::regex: it has no \p{..} and
// backtracks badly). Tested by tests/unit/tokenizer/pretokenize_test.cpp and the parity test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gufo::tokenizer {

// NOTE(pretok): the two patterns, as in the models' tokenizer.json (llama.cpp names them by
// tokenizer.ggml.pre). They differ only in how digits group:
//  qwen2:     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ llama-bpe: the same with \p{N}{1,3} for \p{N}.
enum class PreTokenizer { Qwen2, Llama3 };

// The enum for a tokenizer.ggml.pre name; an error names the unsupported value.
Result<PreTokenizer> pre_tokenizer_from_name(std::string_view name);
std::string_view pre_tokenizer_name(PreTokenizer pre);

// Splits `text` (UTF-8; invalid bytes count as one non-letter, non-digit char each) into
// pieces that concatenate back to `text`.
std::vector<std::string_view> pre_tokenize(PreTokenizer pre, std::string_view text);

}  // namespace gufo::tokenizer
