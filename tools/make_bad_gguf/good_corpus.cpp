// The good GGUF corpus, written by gguf::Writer (see corpus.h):
//  - tiny.gguf: what llama.cpp can load: typical metadata and F32/F16/Q8_0 tensors whose
//    bytes are sized right (their contents are a byte pattern, not real quantized weights);
//  - all_value_types.gguf: every metadata value type, arrays of arrays, alignment 64.
// Checked against the committed tests/data/good by tests/unit/gguf/corpus_test.cpp.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "corpus.h"
#include "gguf/writer.h"

namespace gufo::corpus {
namespace {

using gguf::Array;
using gguf::Value;

std::vector<std::byte> pattern(size_t n_bytes, uint8_t seed) {
  std::vector<std::byte> bytes(n_bytes);
  for (size_t i = 0; i < n_bytes; ++i) bytes[i] = static_cast<std::byte>((i * 7 + seed) & 0xFF);
  return bytes;
}

}  // namespace

Result<std::vector<CorpusFile>> good_corpus() {
  std::vector<CorpusFile> files;

  {
    // NOTE(corpus): sizes: F32 [16, 4] = 256 bytes, F16 [16] = 32, Q8_0 [64, 2] = 2 rows of
    // 2 blocks of 34 bytes (ggml-common.h block_q8_0) = 136.
    const std::vector<std::byte> norm = pattern(32, 1);
    const std::vector<std::byte> embed = pattern(256, 2);
    const std::vector<std::byte> proj = pattern(136, 3);
    gguf::Writer writer;
    writer.set("general.architecture", Value::string("tiny"));
    writer.set("general.name", Value::string("gufo tiny test file"));
    writer.set("general.file_type", Value::u32(7));  // MOSTLY_Q8_0 (spec, general.file_type)
    writer.set("general.quantization_version", Value::u32(2));
    writer.set("tiny.context_length", Value::u32(64));
    writer.set("tiny.embedding_length", Value::u32(16));
    writer.set("tiny.attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    writer.set("tokenizer.ggml.model", Value::string("gpt2"));
    writer.set("tokenizer.ggml.tokens",
               Value::array(Array(std::vector<std::string>{"!", "\"", "#", "hello", " world", "\n", "<|end|>",
                                                           "\xc3\xa9t\xc3\xa9", "x", "y"})));
    writer.set("tokenizer.ggml.token_type", Value::array(Array(std::vector<int32_t>{1, 1, 1, 1, 1, 1, 3, 1, 1, 1})));
    writer.add_tensor({"token_embd.weight", DType::F32, {16, 4}, embed, {}});
    writer.add_tensor({"output_norm.weight", DType::F16, {16}, norm, {}});
    writer.add_tensor({"blk.0.ffn_down.weight", DType::Q8_0, {64, 2}, proj, {}});
    GUFO_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, writer.to_bytes("tiny.gguf"));
    files.push_back({"tiny.gguf", std::move(bytes), ""});
  }

  {
    const std::vector<std::byte> data = pattern(40, 4);
    gguf::Writer writer;
    writer.set("general.alignment", Value::u32(64));
    writer.set("test.u8", Value::u8(255));
    writer.set("test.i8", Value::i8(-128));
    writer.set("test.u16", Value::u16(65535));
    writer.set("test.i16", Value::i16(-32768));
    writer.set("test.u32", Value::u32(4294967295u));
    writer.set("test.i32", Value::i32(std::numeric_limits<int32_t>::min()));
    writer.set("test.f32", Value::f32(0.1f));
    writer.set("test.bool", Value::boolean(true));
    writer.set("test.string", Value::string("caf\xc3\xa9 \"quoted\"\ttab"));
    writer.set("test.u64", Value::u64(std::numeric_limits<uint64_t>::max()));
    writer.set("test.i64", Value::i64(std::numeric_limits<int64_t>::min()));
    writer.set("test.f64", Value::f64(-2.5e-300));
    writer.set("test.empty_string", Value::string(""));
    writer.set("test.array.bool", Value::array(Array(std::vector<bool>{true, false, true})));
    writer.set("test.array.f64", Value::array(Array(std::vector<double>{1.5, -0.0})));
    writer.set("test.array.empty", Value::array(Array(std::vector<uint16_t>{})));
    writer.set("test.array.nested", Value::array(Array(std::vector<Array>{
                                        Array(std::vector<int32_t>{1, 2, 3}),
                                        Array(std::vector<std::string>{"a", "bc"}),
                                        Array(std::vector<Array>{Array(std::vector<uint8_t>{9})}),
                                        Array(std::vector<int64_t>{}),
                                    })));
    writer.add_tensor({"a", DType::F32, {2, 3}, std::span(data).first(24), {}});
    writer.add_tensor({"b", DType::I8, {16}, std::span(data).subspan(24, 16), {}});
    GUFO_ASSIGN_OR_RETURN(std::vector<std::byte> bytes, writer.to_bytes("all_value_types.gguf"));
    files.push_back({"all_value_types.gguf", std::move(bytes), ""});
  }
  return files;
}

}  // namespace gufo::corpus
