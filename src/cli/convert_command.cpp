// `gufo convert HF_DIR -o OUT.gguf [--outtype f32|f16|bf16|q8_0] [--vocab-only]`: a Hugging
// Face model folder to a GGUF (src/convert/hf_convert.cpp), or with --vocab-only its tokenizer
// alone (src/tokenizer/hf_import.cpp); this file only wires flags. Tested by
// tests/unit/tokenizer/cli_test.cpp, tests/unit/convert/hf_convert_test.cpp (Cli), tests/js.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "cli/command.h"
#include "convert/hf_convert.h"
#include "gguf/file.h"
#include "tokenizer/hf_import.h"

namespace gufo::cli {

namespace {

struct ConvertOptions {
  std::string hf_dir;
  std::string out_path;
  std::string outtype = "f16";  // llama.cpp's default
  bool vocab_only = false;
  bool quiet = false;
};

// "gufo convert: wrote OUT (N tensors, X MiB) in S s", from the file as written.
void print_summary(const std::string& path, std::chrono::steady_clock::duration took) {
  std::error_code ec;
  const double mib = static_cast<double>(std::filesystem::file_size(path, ec)) / (1 << 20);
  auto file = gguf::File::open(path);
  std::fprintf(stderr, "gufo convert: wrote %s (%zu tensors, %.1f MiB) in %.1f s\n", path.c_str(),
               file.ok() ? file->tensors().size() : size_t{0}, ec ? 0.0 : mib,
               std::chrono::duration<double>(took).count());
}

int run_convert(const ConvertOptions& options) {
  if (!options.vocab_only) {
    const std::optional<DType> outtype = convert::parse_outtype(options.outtype);
    if (!outtype) {
      return report_error(Error{"convert: --outtype " + options.outtype + ": expected f32, f16, bf16 or q8_0"});
    }
    const auto started = std::chrono::steady_clock::now();
    Status converted =
        convert::convert_hf_model(options.hf_dir, options.out_path, *outtype, options.quiet ? nullptr : stderr);
    if (!converted.ok()) return report_error(converted.error());
    if (!options.quiet) print_summary(options.out_path, std::chrono::steady_clock::now() - started);
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
  app->add_option("HF_DIR", options->hf_dir, "folder with config.json, *.safetensors, tokenizer.json")->required();
  app->add_option("-o,--output", options->out_path, "the GGUF file to write")->required();
  app->add_option("--outtype", options->outtype, "type of the weight matrices (default f16)")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}, CLI::ignore_case));
  app->add_flag("--vocab-only", options->vocab_only, "write the tokenizer only, no tensors");
  app->add_flag("--quiet", options->quiet, "no progress or summary on stderr");
  return Command{app, [options] { return run_convert(*options); }};
}

}  // namespace gufo::cli
