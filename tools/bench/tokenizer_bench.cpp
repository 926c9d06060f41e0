// Google Benchmark of Gufo's tokenizer: encode throughput (bytes/s) on a text file, for the
// vocab of each GGUF given. Run by tools/bench/tokenizer_bench.sh, which also measures the
// JavaScript port on the same text in the same run; results go to BENCHMARKS.md.
// Usage: tokenizer_bench --text TEXT.txt NAME=M.gguf... [--benchmark_* flags]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace {

struct Model {
  std::string name;
  std::shared_ptr<const gufo::tokenizer::Tokenizer> tokenizer;
};

void bench_encode(benchmark::State& state, const Model& model, const std::string& text) {
  size_t n_tokens = 0;
  for (auto _ : state) {
    // parse_special: the JS port always splits added tokens out, so this is the same job.
    const std::vector<int32_t> ids = model.tokenizer->encode(text, /*parse_special=*/true);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["n_tokens"] = static_cast<double>(n_tokens);
  state.counters["bytes"] = static_cast<double>(text.size());
}

int usage(const char* message) {
  std::fprintf(stderr, "tokenizer_bench: %s\nusage: tokenizer_bench --text TEXT.txt NAME=M.gguf...\n", message);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);  // takes the --benchmark_* flags out of argv
  std::string text_path;
  std::vector<Model> models;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--text" && i + 1 < argc) {
      text_path = argv[++i];
      continue;
    }
    const size_t eq = arg.find('=');
    if (eq == std::string_view::npos) return usage("expected NAME=M.gguf");
    const std::string path(arg.substr(eq + 1));
    auto file = gufo::gguf::File::open(path);
    if (!file.ok()) return usage(file.error().message.c_str());
    auto tokenizer = gufo::tokenizer::Tokenizer::load(*file);
    if (!tokenizer.ok()) return usage(tokenizer.error().message.c_str());
    models.push_back(Model{std::string(arg.substr(0, eq)),
                           std::make_shared<const gufo::tokenizer::Tokenizer>(std::move(*tokenizer))});
  }
  if (text_path.empty() || models.empty()) return usage("need --text and at least one model");
  std::ifstream in(text_path, std::ios::binary);
  if (!in) return usage(("cannot read " + text_path).c_str());
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());

  for (const Model& model : models) {
    benchmark::RegisterBenchmark(("encode/" + model.name).c_str(), bench_encode, model, text)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
