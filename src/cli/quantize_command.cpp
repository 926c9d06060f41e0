// `gufo quantize IN.gguf OUT.gguf TYPE [--quiet] [--threads N] [--override-kv KEY=TYPE:VALUE]...`: re-encodes a GGUF
// under one of llama.cpp's mixes (src/quantize/quantize_model.cpp); this file only wires flags. Tested by
// tests/unit/quantize/quantize_model_test.cpp (Cli).
#include <memory>
#include <string>
#include <vector>

#include "cli/command.h"
#include "quantize/quantize_model.h"

namespace gufo::cli {
namespace {

struct QuantizeCommandOptions {
  std::string in_path;
  std::string out_path;
  std::string type;
  unsigned n_threads = 0;
  bool quiet = false;
  std::vector<std::string> overrides;
};

int run_quantize(const QuantizeCommandOptions& options) {
  const auto mix = quantize::parse_quant_mix(options.type);
  if (!mix) {
    return report_error(Error{"quantize: TYPE " + options.type + ": expected q8_0, q6_k, q5_k_m or q4_k_m"});
  }
  quantize::QuantizeOptions quantize_options;
  quantize_options.n_threads = options.n_threads;
  quantize_options.progress = options.quiet ? nullptr : stderr;
  for (const std::string& text : options.overrides) {
    Result<quantize::KvOverride> parsed = quantize::parse_kv_override(text);
    if (!parsed.ok()) return report_error(parsed.error());
    quantize_options.overrides.push_back(std::move(parsed).value());
  }
  Status done = quantize::quantize_model(options.in_path, options.out_path, *mix, quantize_options);
  if (!done.ok()) return report_error(done.error());
  return 0;
}

}  // namespace

Command register_quantize(CLI::App& root) {
  auto options = std::make_shared<QuantizeCommandOptions>();
  CLI::App* app = root.add_subcommand(
      "quantize", "Re-encode a GGUF's weights with llama.cpp's type mixes (q8_0, q6_k, q5_k_m, q4_k_m)");
  app->add_option("IN", options->in_path, "the GGUF to read (F32/F16/BF16/Q8_0/K-quant weights)")->required();
  app->add_option("OUT", options->out_path, "the GGUF to write")->required();
  app->add_option("TYPE", options->type, "q8_0, q6_k, q5_k_m or q4_k_m")->required();
  app->add_option("--threads", options->n_threads, "worker threads (default: all cores)");
  app->add_flag("--quiet", options->quiet, "no progress on stderr");
  app->add_option("--override-kv", options->overrides,
                  "KEY=TYPE:VALUE: set a metadata key in OUT (TYPE int, float, bool or str; as llama-quantize), "
                  "e.g. qwen3.pooling_type=int:3; repeatable")
      ->allow_extra_args(false);
  return Command{app, [options] { return run_quantize(*options); }};
}

}  // namespace gufo::cli
