// `gufo convert HF_DIR -o OUT.gguf --vocab-only`: a Hugging Face tokenizer folder to a
// vocab-only GGUF (the logic lives in src/tokenizer/hf_import.cpp; this only wires flags).
// Tested by tests/unit/tokenizer/cli_test.cpp and tests/js/tokenizer_parity.test.mjs.
#include <memory>
#include <string>

#include "cli/command.h"
#include "tokenizer/hf_import.h"

namespace gufo::cli {

namespace {

struct ConvertOptions {
  std::string hf_dir;
  std::string out_path;
  bool vocab_only = false;
};

int run_convert(const ConvertOptions& options) {
  if (!options.vocab_only) {
    return report_error(Error{"convert: only --vocab-only is supported so far"});
  }
  auto writer = tokenizer::import_hf_tokenizer(options.hf_dir);
  if (!writer.ok()) return report_error(writer.error());
  gguf::WriteOptions write_options;
  Status written = writer->write(options.out_path, write_options);
  if (!written.ok()) return report_error(written.error());
  return 0;
}

}  // namespace

Command register_convert(CLI::App& root) {
  auto options = std::make_shared<ConvertOptions>();
  CLI::App* app = root.add_subcommand("convert", "Convert a Hugging Face model folder to GGUF");
  app->add_option("HF_DIR", options->hf_dir, "folder with tokenizer.json")->required();
  app->add_option("-o,--output", options->out_path, "the GGUF file to write")->required();
  app->add_flag("--vocab-only", options->vocab_only, "write the tokenizer only, no tensors");
  return Command{app, [options] { return run_convert(*options); }};
}

}  // namespace gufo::cli
