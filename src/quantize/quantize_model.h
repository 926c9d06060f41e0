// `gufo quantize IN OUT TYPE`: re-encodes the weights of a GGUF under one of llama.cpp's
// mixes (type_mix.h). Metadata is copied unchanged except general.file_type,
// general.quantization_version and the keys of --override-kv; tensors keep their order and shapes. Every tensor's rows
// are dequantized to fp32 (quant::dequantize_row) and re-encoded (quant::quantize_row) on all cores; a tensor whose
// type does not change is copied byte for byte. Tested by tests/unit/quantize/quantize_model_test.cpp.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "core/result.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "quantize/kv_override.h"
#include "quantize/type_mix.h"

namespace gufo::quantize {

struct QuantizeOptions {
  unsigned n_threads = 0;             // 0: hardware_concurrency
  std::FILE* progress = nullptr;      // "[i/n] name: OLD -> NEW" lines, or nothing
  std::vector<KvOverride> overrides;  // metadata set last (--override-kv), in order
};

// The model facts the mix needs, from the file's metadata (general.architecture,
// <arch>.block_count, expert_count, head counts) and whether output.weight exists.
Result<ModelFacts> model_facts_of(const gguf::File& file);

// Writes OUT from IN (all-or-nothing through OUT.tmp; refuses OUT == IN). Errors are one
// line naming the file and, where it applies, the tensor.
Status quantize_model(const std::string& in_path, const std::string& out_path, QuantMix mix,
                      const QuantizeOptions& options);

}  // namespace gufo::quantize
