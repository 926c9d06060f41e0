// The real model shapes `gufo synth` can build: each is the Hugging Face config.json of the
// model (the fields a converter reads), parsed by convert::parse_hf_config exactly as
// `gufo convert` would parse the real folder. Tested by tests/unit/quantize/synth_test.cpp.
#pragma once

#include <span>
#include <string_view>

#include "convert/hf_config.h"
#include "core/result.h"

namespace gufo::quantize {

struct SynthShape {
  std::string_view arch;         // gguf architecture: "qwen3", "llama"
  std::string_view shape;        // "0.6b", "8b", ...
  std::string_view hf_model;     // where the numbers come from, e.g. "Qwen/Qwen3-0.6B"
  std::string_view config_json;  // its config.json (the fields conversion reads)
};

std::span<const SynthShape> synth_shapes();

// The parsed config of --arch/--shape; an unknown pair is an error listing the known ones.
Result<convert::HfConfig> synth_config(std::string_view arch, std::string_view shape);

}  // namespace gufo::quantize
