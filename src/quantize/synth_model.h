// `gufo synth`: a random-weight model of a real shape (synth_shapes.h), for benchmarks.
// The file has the metadata and tensor names `gufo convert` writes for that config.json
// (convert::set_gguf_model_metadata, same tensor order), a synthetic tokenizer
// (synth_vocab.h), and weights drawn from a counter-based generator keyed by (seed, tensor
// name, row), so any thread count gives the same bytes. Types follow type_mix.h.
// Tensors are generated and encoded row-parallel and streamed one at a time to the writer.
// NOTE(synth): Q4_K rows use the search-free encoder (fast_q4_k.h): with the reference's
// scale search an 8B Q4_K_M took 71 s on 16 cores, almost all of it in Q4_K.
// Tested by tests/unit/quantize/synth_test.cpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "core/result.h"
#include "quantize/type_mix.h"

namespace gufo::quantize {

struct SynthOptions {
  std::string arch;   // "qwen3", "llama"
  std::string shape;  // "0.6b", ...
  OutputType type;
  uint64_t seed = 0;
  std::optional<uint32_t> n_layer;  // fewer layers than the real model (tests)
  std::optional<uint32_t> n_vocab;  // a smaller vocabulary (tests; see synth_vocab.h)
  unsigned n_threads = 0;           // 0: hardware_concurrency
  std::FILE* progress = nullptr;    // "[i/n] name: TYPE" lines, or nothing
};

// Writes the model to `out_path` (all-or-nothing, see gguf/writer.h).
Status synth_model(const SynthOptions& options, const std::string& out_path);

// Element `index` of row `row_idx` of tensor `name` before scaling: deterministic,
// roughly normal with mean 0 and variance 1 (Irwin-Hall of four 16-bit uniforms).
float synth_unit_value(uint64_t seed, std::string_view name, uint64_t row_idx, uint64_t index);

}  // namespace gufo::quantize
