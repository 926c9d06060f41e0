// llama-quantize's --override-kv KEY=TYPE:VALUE: a metadata key written into the output
// GGUF with a new value (or added). TYPE is int (written as uint32, as llama-quantize does,
// so that keys such as {arch}.pooling_type read back as llama.cpp expects), float (float32),
// bool (true/false) or str. Tested by tests/unit/quantize/quantize_model_test.cpp.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "gguf/value.h"

namespace gufo::quantize {

struct KvOverride {
  std::string key;
  gguf::Value value;
};

// Errors name the text and what is wrong with it.
Result<KvOverride> parse_kv_override(std::string_view text);

}  // namespace gufo::quantize
