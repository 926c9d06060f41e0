// `gufo synth --arch A --shape S --type T -o OUT.gguf [--seed N] [--layers N] [--vocab N]
// [--quiet]`: a random-weight model of a real shape, for benchmarks (src/quantize/synth_model.cpp); this
// file only wires flags. Tested by tests/unit/quantize/synth_test.cpp (Cli).
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "quantize/synth_model.h"

namespace gufo::cli {
namespace {

struct SynthCommandOptions {
  std::string arch;
  std::string shape;
  std::string type;
  std::string out_path;
  uint64_t seed = 0;
  uint32_t n_layer = 0;  // 0: the real count
  uint32_t n_vocab = 0;  // 0: the real size
  unsigned n_threads = 0;
  bool quiet = false;
};

int run_synth(const SynthCommandOptions& options) {
  const auto type = quantize::parse_output_type(options.type);
  if (!type) {
    return report_error(
        Error{"synth: --type " + options.type + ": expected f32, f16, bf16, q8_0, q6_k, q5_k_m or q4_k_m"});
  }
  quantize::SynthOptions synth_options;
  synth_options.arch = options.arch;
  synth_options.shape = options.shape;
  synth_options.type = *type;
  synth_options.seed = options.seed;
  if (options.n_layer != 0) synth_options.n_layer = options.n_layer;
  if (options.n_vocab != 0) synth_options.n_vocab = options.n_vocab;
  synth_options.n_threads = options.n_threads;
  synth_options.progress = options.quiet ? nullptr : stderr;
  const auto start = std::chrono::steady_clock::now();
  Status done = quantize::synth_model(synth_options, options.out_path);
  if (!done.ok()) return report_error(done.error());
  if (!options.quiet) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    std::fprintf(stderr, "wrote %s in %.1f s\n", options.out_path.c_str(), elapsed.count());
  }
  return 0;
}

}  // namespace

Command register_synth(CLI::App& root) {
  auto options = std::make_shared<SynthCommandOptions>();
  CLI::App* app = root.add_subcommand("synth", "Write a random-weight model of a real shape, for benchmarks");
  app->add_option("--arch", options->arch, "qwen3, qwen3moe or llama")->required();
  app->add_option("--shape", options->shape, "qwen3: 0.6b, 1.7b, 8b, 32b; qwen3moe: 30b-a3b, small; llama: 1b, 8b")
      ->required();
  app->add_option("--type", options->type, "f32, f16, bf16, q8_0, q6_k, q5_k_m or q4_k_m")->required();
  app->add_option("-o,--output", options->out_path, "the GGUF file to write")->required();
  app->add_option("--seed", options->seed, "weights are a function of the seed (default 0)");
  app->add_option("--layers", options->n_layer, "fewer layers than the real model (tests)");
  app->add_option("--vocab", options->n_vocab,
                  "a smaller vocabulary than the real model (tests; specials keep their distance "
                  "from the end)");
  app->add_option("--threads", options->n_threads, "worker threads (default: all cores)");
  app->add_flag("--quiet", options->quiet, "no progress on stderr");
  return Command{app, [options] { return run_synth(*options); }};
}

}  // namespace gufo::cli
