// sample_gguf: writes a small GGUF holding every metadata value type and one tensor of each
// type Gufo can quantize, filled with deterministic data. The build runs it (build/<preset>/
// sample.gguf) so README's first command and the npm oracle test (tests/js) have a real file.
// Usage: sample_gguf OUT.gguf
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "gguf/writer.h"
#include "quant/quant.h"

namespace {

using gufo::DType;
using gufo::gguf::Array;
using gufo::gguf::Value;

// [n_rows, n_cols] of smooth values with a few outliers, like real weights.
std::vector<float> sample_weights(int64_t n_elems, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> values(static_cast<size_t>(n_elems));
  for (float& value : values) value = normal(rng);
  for (int64_t i = 0; i < n_elems; i += 97) values[static_cast<size_t>(i)] *= 25.0f;
  return values;
}

int write_sample(const std::string& path) {
  gufo::gguf::Writer writer;
  writer.set("general.architecture", Value::string("sample"));
  writer.set("general.name", Value::string("gufo sample (not a model)"));
  writer.set("general.alignment", Value::u32(64));
  writer.set("sample.u8", Value::u8(200));
  writer.set("sample.i8", Value::i8(-100));
  writer.set("sample.u16", Value::u16(60000));
  writer.set("sample.i16", Value::i16(-30000));
  writer.set("sample.u32", Value::u32(4000000000u));
  writer.set("sample.i32", Value::i32(-2000000000));
  writer.set("sample.f32", Value::f32(0.15625f));
  writer.set("sample.bool", Value::boolean(true));
  writer.set("sample.string", Value::string("h\xc3\xa9llo, \xe4\xb8\x96\xe7\x95\x8c"));
  writer.set("sample.u64", Value::u64(18000000000000000000ull));
  writer.set("sample.i64", Value::i64(-9000000000000000000ll));
  writer.set("sample.f64", Value::f64(-2.5));
  writer.set("sample.strings", Value::array(Array(std::vector<std::string>{"<s>", "</s>", "a"})));
  writer.set("sample.floats", Value::array(Array(std::vector<float>{0.5f, -1.0f, 3.25f})));
  writer.set("sample.nested", Value::array(Array(std::vector<Array>{Array(std::vector<int32_t>{1, 2, 3}),
                                                                    Array(std::vector<std::string>{"x"})})));

  const DType types[] = {DType::F32, DType::F16, DType::BF16, DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  constexpr uint64_t n_cols = 512;  // a multiple of every block size
  constexpr uint64_t n_rows = 8;
  std::vector<std::vector<std::byte>> storage;
  storage.reserve(std::size(types));
  uint32_t seed = 1;
  for (DType type : types) {
    std::vector<float> weights = sample_weights(n_cols * n_rows, seed++);
    const uint64_t row_bytes = gufo::dtype_row_bytes(gufo::dtype_info(type), n_cols);
    std::vector<std::byte> bytes(row_bytes * n_rows);
    for (uint64_t row = 0; row < n_rows; ++row) {
      gufo::Status status = gufo::quant::quantize_row(type, weights.data() + row * n_cols, n_cols,
                                                      bytes.data() + row * row_bytes, row_bytes);
      if (!status.ok()) {
        std::fprintf(stderr, "sample_gguf: %s\n", status.error().message.c_str());
        return 1;
      }
    }
    storage.push_back(std::move(bytes));
    std::string name = "sample." + std::string(gufo::dtype_name(type)) + ".weight";
    writer.add_tensor({name, type, {n_cols, n_rows}, storage.back(), {}});
  }

  gufo::Status status = writer.write(path);
  if (!status.ok()) {
    std::fprintf(stderr, "sample_gguf: %s\n", status.error().message.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: sample_gguf OUT.gguf\n");
    return 2;
  }
  return write_sample(argv[1]);
}
