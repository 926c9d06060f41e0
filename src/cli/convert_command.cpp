// `gufo convert HF_DIR -o OUT.gguf [--outtype f32|f16|bf16|q8_0] [--vocab-only]`: a Hugging
// Face model folder to a GGUF (src/convert/hf_convert.cpp), or with --vocab-only its tokenizer
// alone (src/tokenizer/hf_import.cpp); this file only wires flags. Tested by
// tests/unit/tokenizer/cli_test.cpp, tests/unit/convert/hf_convert_test.cpp (Cli), tests/js.
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "convert/hf_convert.h"
#include "tokenizer/hf_import.h"

namespace gufo::cli {

namespace {

struct ConvertOptions {
  std::string hf_dir;
  std::string out_path;
  std::string outtype = "f16";  // llama.cpp's default
  bool vocab_only = false;
};

int run_convert(const ConvertOptions& options) {
  if (!options.vocab_only) {
    const std::optional<DType> outtype = convert::parse_outtype(options.outtype);
    if (!outtype) {
      return report_error(
          Error{"convert: --outtype " + options.outtype + ": expected f32, f16, bf16 or q8_0"});
    }
    Status converted = convert::convert_hf_model(options.hf_dir, options.out_path, *outtype);
    if (!converted.ok()) return report_error(converted.error());
    return 0;
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
  app->add_option("HF_DIR", options->hf_dir,
                  "folder with config.json, *.safetensors, tokenizer.json")
      ->required();
  app->add_option("-o,--output", options->out_path, "the GGUF file to write")->required();
  app->add_option("--outtype", options->outtype, "type of the weight matrices (default f16)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}, CLI::ignore_case));
  app->add_flag("--vocab-only", options->vocab_only, "write the tokenizer only, no tensors");
  return Command{app, [options] { return run_convert(*options); }};
}

}  // namespace gufo::cli
