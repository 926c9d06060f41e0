// Hugging Face model folder (config.json, *.safetensors, tokenizer.json) -> GGUF, laid out
// exactly as llama.cpp's convert_hf_to_gguf.py writes qwen3, qwen3moe, llama and qwen2
// files, so the output is interchangeable with the GGUF ecosystem.
// Tested by tests/unit/convert/hf_convert_test.cpp (tiny folders written by the test, and
// the transformers-made models under tests/data/models when present).
//
// Design in brief:
// - config.json -> HfConfig (hf_config.h); the tensors are mapped, not loaded (safetensors.h).
// - Every output tensor is planned and checked first (names, shapes against the config,
//   tied/untied output, unexpected tensors), so bad input fails before any bytes are written.
// - Each planned tensor is a row map (output row -> source tensor and row) plus a target
//   type; the gguf::Writer pulls one tensor at a time through a fill callback, so memory
//   holds one converted tensor, never the model. The writer goes through OUT.tmp + rename.
// - Tokenizer keys come from tokenizer/hf_import (the --vocab-only path), padded to the
//   embedding rows with [PAD<id>] unused tokens as llama.cpp does.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "gguf/writer.h"
#include "safetensors/safetensors.h"

namespace gufo::convert {

// "f32", "f16", "bf16", "q8_0" (case-insensitive) -> the type of the big matrices.
std::optional<DType> parse_outtype(std::string_view text);

// A planned conversion: the writer's tensors read from `checkpoint` when written, so the
// checkpoint must stay alive (it is owned here, at a stable address) until then.
struct HfConversion {
  std::unique_ptr<safetensors::Checkpoint> checkpoint;
  gguf::Writer writer;
};

// Reads and validates everything in `hf_dir` and plans the GGUF; writes nothing.
// `outtype` is F32, F16, BF16 or Q8_0. Errors are one line naming the file or tensor.
// With `progress`, each tensor prints "[i/n] name: TYPE" there as it is written.
Result<HfConversion> prepare_hf_conversion(const std::string& hf_dir, DType outtype, std::FILE* progress = nullptr);

// prepare_hf_conversion + write to `out_path` (all-or-nothing, see gguf/writer.h).
Status convert_hf_model(const std::string& hf_dir, const std::string& out_path, DType outtype,
                        std::FILE* progress = nullptr);

// The general.* and <arch>.* metadata keys a conversion of `config` writes (the same code
// path), for writers of other model files such as `gufo synth`. general.file_type is set
// for `outtype` (F32, F16, BF16 or Q8_0); callers writing other types override it.
struct HfConfig;
void set_gguf_model_metadata(gguf::Writer& writer, const HfConfig& config, const std::string& model_name,
                             DType outtype);

}  // namespace gufo::convert
