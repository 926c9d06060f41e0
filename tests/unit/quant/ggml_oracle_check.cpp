// Differential check of gufo_quant against ggml's own compiled code (libggml-base.so), and
// the generator of the digests in ggml_golden_test.cpp. Built only when GUFO_GGML_BASE_LIB
// names that library (ctest label `oracle`); e.g. from `npm pack @node-llama-cpp/linux-x64`
// (bins/linux-x64/libggml-base.so). Run: quant_ggml_oracle LIB [--exhaustive] [--print-goldens]
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "quant/half.h"
#include "quant/reference.h"
#include "test_data.h"

namespace {

using namespace gufo::quant;
using namespace gufo::quant::test_data;

using QuantizeFn = void (*)(const float*, void*, int64_t);
using DequantizeFn = void (*)(const void*, float*, int64_t);

struct TypeUnderTest {
  const char* name;
  const char* ggml_quantize;    // quantize_row_*_ref: what llama.cpp's `quantize` runs
  const char* ggml_dequantize;  // dequantize_row_*
  size_t block_bytes;
  int block_elems;
  QuantizeFn quantize;
  DequantizeFn dequantize;
  std::initializer_list<size_t> fp16_offsets;
};

// "sub_block_scales" -> "kSubBlockScales", the enum token the golden table uses.
std::string enum_token(const char* snake_name) {
  std::string token = "k";
  bool upper = true;
  for (const char* c = snake_name; *c != '\0'; ++c) {
    if (*c == '_') {
      upper = true;
      continue;
    }
    token += upper ? static_cast<char>(*c - 'a' + 'A') : *c;
    upper = false;
  }
  return token;
}

void* ggml_symbol(void* lib, const char* name) {
  void* symbol = dlsym(lib, name);
  if (symbol == nullptr) {
    std::fprintf(stderr, "ggml library lacks %s\n", name);
    std::exit(2);
  }
  return symbol;
}

// Counts conversions that differ from ggml's; `stride` 1 visits all 2^32 fp32 patterns.
long check_conversions(void* lib, uint64_t stride) {
  auto to_fp16 = reinterpret_cast<uint16_t (*)(float)>(ggml_symbol(lib, "ggml_fp32_to_fp16"));
  auto to_bf16 = reinterpret_cast<uint16_t (*)(float)>(ggml_symbol(lib, "ggml_fp32_to_bf16"));
  auto from_fp16 = reinterpret_cast<float (*)(uint16_t)>(ggml_symbol(lib, "ggml_fp16_to_fp32"));
  long mismatches = 0;
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto half_bits = static_cast<uint16_t>(h);
    mismatches += float_bits(fp16_to_fp32(half_bits)) != float_bits(from_fp16(half_bits));
  }
  for (uint64_t bits = 0; bits < (uint64_t{1} << 32); bits += stride) {
    const float value = float_from_bits(static_cast<uint32_t>(bits));
    mismatches += fp32_to_fp16(value) != to_fp16(value);
    mismatches += fp32_to_bf16(value) != to_bf16(value);
  }
  std::printf("fp16/bf16 conversions (fp32 stride %llu): %ld mismatches\n", static_cast<unsigned long long>(stride),
              mismatches);
  return mismatches;
}

// Quantizes every pattern for `n_seeds` seeds (plus rows of huge finite values and of random
// non-NaN bit patterns) with both implementations and compares bytes and decoded floats.
long check_type(void* lib, const TypeUnderTest& type, int n_seeds, bool print_goldens) {
  auto ggml_quantize = reinterpret_cast<QuantizeFn>(ggml_symbol(lib, type.ggml_quantize));
  auto ggml_dequantize = reinterpret_cast<DequantizeFn>(ggml_symbol(lib, type.ggml_dequantize));
  const int64_t n_elems = 4096;
  const size_t row_bytes = n_elems / type.block_elems * type.block_bytes;
  std::vector<uint8_t> ours(row_bytes);
  std::vector<uint8_t> theirs(row_bytes);
  std::vector<float> ours_y(n_elems);
  std::vector<float> theirs_y(n_elems);
  long rows = 0;
  long mismatches = 0;
  auto compare = [&](const std::vector<float>& x, const char* what, int seed) {
    type.quantize(x.data(), ours.data(), n_elems);
    ggml_quantize(x.data(), theirs.data(), n_elems);
    type.dequantize(theirs.data(), ours_y.data(), n_elems);
    ggml_dequantize(theirs.data(), theirs_y.data(), n_elems);
    ++rows;
    if (ours != theirs || std::memcmp(ours_y.data(), theirs_y.data(), n_elems * 4) != 0) {
      if (mismatches++ < 5) std::printf("  %s %s seed %d differs\n", type.name, what, seed);
    }
  };
  for (Pattern pattern : kAllPatterns) {
    uint64_t digest = kFnv1aOffset;
    for (int seed = 1; seed <= n_seeds; ++seed) {
      compare(make_input(pattern, static_cast<uint64_t>(seed), n_elems), pattern_name(pattern), seed);
      if (seed <= 16) digest = fnv1a(theirs.data(), theirs.size(), digest);
    }
    if (print_goldens) {
      std::printf("    {DType::%s, Pattern::%s, 0x%016llxull},\n", type.name, enum_token(pattern_name(pattern)).c_str(),
                  static_cast<unsigned long long>(digest));
    }
  }
  for (int seed = 1; seed <= n_seeds; ++seed) {
    Rng rng(static_cast<uint64_t>(seed) * 7919);
    std::vector<float> huge(n_elems);
    std::vector<float> any_bits(n_elems);
    for (int64_t i = 0; i < n_elems; ++i) {
      huge[i] = rng.normal() * ((rng.next() % 50 == 0) ? 1e30f : 1.0f);
      const float value = float_from_bits(static_cast<uint32_t>(rng.next()));
      // NOTE(oracle): NaN payloads propagate in compiler-chosen operand order, so NaN inputs
      // are not comparable bit for bit; the checked API refuses them anyway.
      any_bits[i] = std::isnan(value) ? INFINITY : value;
    }
    compare(huge, "1e30 outliers", seed);
    compare(any_bits, "random non-NaN bits", seed);
  }
  // Random blocks (finite fp16 scales) decode the same.
  for (int seed = 1; seed <= n_seeds; ++seed) {
    const std::vector<uint8_t> blocks =
        make_random_blocks(static_cast<uint64_t>(seed), type.block_bytes, 64, type.fp16_offsets);
    const int64_t block_row = 64 * type.block_elems;
    std::vector<float> a(block_row);
    std::vector<float> b(block_row);
    type.dequantize(blocks.data(), a.data(), block_row);
    ggml_dequantize(blocks.data(), b.data(), block_row);
    mismatches += std::memcmp(a.data(), b.data(), a.size() * 4) != 0;
    if (print_goldens && seed == 1) {
      std::printf("    dequantize %s: 0x%016llxull\n", type.name,
                  static_cast<unsigned long long>(fnv1a(b.data(), b.size() * 4)));
    }
  }
  std::printf("%s: %ld rows, %ld mismatches\n", type.name, rows, mismatches);
  return mismatches;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s libggml-base.so [--exhaustive] [--print-goldens]\n", argv[0]);
    return 2;
  }
  bool exhaustive = false;
  bool print_goldens = false;
  for (int i = 2; i < argc; ++i) {
    exhaustive |= std::string(argv[i]) == "--exhaustive";
    print_goldens |= std::string(argv[i]) == "--print-goldens";
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
    return 2;
  }
  const TypeUnderTest types[] = {
      {"Q8_0",
       "quantize_row_q8_0_ref",
       "dequantize_row_q8_0",
       sizeof(BlockQ8_0),
       kQ8_0BlockElems,
       [](const float* x, void* y, int64_t n) { quantize_row_q8_0(x, static_cast<BlockQ8_0*>(y), n); },
       [](const void* x, float* y, int64_t n) { dequantize_row_q8_0(static_cast<const BlockQ8_0*>(x), y, n); },
       {0}},
      {"Q4_K",
       "quantize_row_q4_K_ref",
       "dequantize_row_q4_K",
       sizeof(BlockQ4K),
       kQkK,
       [](const float* x, void* y, int64_t n) { quantize_row_q4_k(x, static_cast<BlockQ4K*>(y), n); },
       [](const void* x, float* y, int64_t n) { dequantize_row_q4_k(static_cast<const BlockQ4K*>(x), y, n); },
       {0, 2}},
      {"Q5_K",
       "quantize_row_q5_K_ref",
       "dequantize_row_q5_K",
       sizeof(BlockQ5K),
       kQkK,
       [](const float* x, void* y, int64_t n) { quantize_row_q5_k(x, static_cast<BlockQ5K*>(y), n); },
       [](const void* x, float* y, int64_t n) { dequantize_row_q5_k(static_cast<const BlockQ5K*>(x), y, n); },
       {0, 2}},
      {"Q6_K",
       "quantize_row_q6_K_ref",
       "dequantize_row_q6_K",
       sizeof(BlockQ6K),
       kQkK,
       [](const float* x, void* y, int64_t n) { quantize_row_q6_k(x, static_cast<BlockQ6K*>(y), n); },
       [](const void* x, float* y, int64_t n) { dequantize_row_q6_k(static_cast<const BlockQ6K*>(x), y, n); },
       {208}},
  };
  // NOTE(oracle): 4093 is prime, so a strided sweep still varies the low mantissa bits.
  long mismatches = check_conversions(lib, exhaustive ? 1 : 4093);
  for (const TypeUnderTest& type : types) {
    mismatches += check_type(lib, type, exhaustive ? 200 : 20, print_goldens);
  }
  std::printf("%s\n", mismatches == 0 ? "bit-exact with ggml" : "MISMATCHES FOUND");
  return mismatches == 0 ? 0 : 1;
}
