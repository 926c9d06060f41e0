// `gufo tokenize -m M.gguf` (stdin text -> ids) and `gufo detokenize -m M.gguf` (a JSON
// array of ids on stdin -> text). --json-lines does many inputs per run, one per line.
// Tested by tests/unit/tokenizer/cli_test.cpp and tests/js/tokenizer_parity.test.mjs.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/default_model.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"

namespace gufo::cli {

namespace {

using nlohmann::json;

struct TokenizeOptions {
  std::string model_path;
  bool special = false;
  bool json_output = false;
  bool json_lines = false;
  bool no_bos = false;
};

Result<tokenizer::Tokenizer> load_tokenizer(const std::string& model_path) {
  GUFO_ASSIGN_OR_RETURN(const std::string path, model_or_default(model_path));
  GUFO_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(path));
  return tokenizer::Tokenizer::load(file);
}

std::string read_stdin() {
  return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// --json-lines: runs `handle(line, "stdin line N")` on every stdin line; the first error
// ends the run with exit code 1, as any other bad input does.
int for_each_stdin_line(const std::function<Status(const std::string&, const std::string&)>& handle) {
  std::string line;
  size_t line_no = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    const Status status = handle(line, "stdin line " + std::to_string(line_no));
    if (!status.ok()) return report_error(status.error());
  }
  return 0;
}

std::vector<int32_t> encode(const tokenizer::Tokenizer& tok, const std::string& text, const TokenizeOptions& options) {
  std::vector<int32_t> ids;
  if (tok.vocab().add_bos && !options.no_bos) ids.push_back(tok.vocab().bos_id);
  const std::vector<int32_t> body = tok.encode(text, options.special);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

int run_tokenize(const TokenizeOptions& options) {
  auto tok = load_tokenizer(options.model_path);
  if (!tok.ok()) return report_error(tok.error());
  if (options.json_lines) {
    // Each stdin line is a JSON string; each output line the JSON array of its ids.
    return for_each_stdin_line([&](const std::string& line, const std::string& where) -> Status {
      const json text = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (text.is_discarded() || !text.is_string()) return Error{where + ": expected a JSON string"};
      std::cout << json(encode(*tok, text.get<std::string>(), options)).dump() << '\n';
      return {};
    });
  }
  const std::vector<int32_t> ids = encode(*tok, read_stdin(), options);
  if (options.json_output) {
    std::cout << json(ids).dump() << '\n';
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::cout << (i ? " " : "") << ids[i];
    std::cout << '\n';
  }
  return 0;
}

Result<std::string> detokenize_json(const tokenizer::Tokenizer& tok, const std::string& text,
                                    const std::string& where) {
  const json ids = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (ids.is_discarded() || !ids.is_array()) return Error{where + ": expected a JSON array of ids"};
  std::vector<int32_t> values;
  for (const json& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      return Error{where + ": expected a token id, found " + id.dump()};
    }
    values.push_back(static_cast<int32_t>(id.get<int64_t>()));
  }
  auto decoded = tok.decode(values);
  if (!decoded.ok()) return Error{where + ": " + decoded.error().message};
  return std::move(decoded).value();
}

int run_detokenize(const TokenizeOptions& options) {
  auto tok = load_tokenizer(options.model_path);
  if (!tok.ok()) return report_error(tok.error());
  if (options.json_lines) {
    // Each stdin line a JSON array of ids; each output line the text as a JSON string.
    return for_each_stdin_line([&](const std::string& line, const std::string& where) -> Status {
      GUFO_ASSIGN_OR_RETURN(std::string text, detokenize_json(*tok, line, where));
      std::cout << json(text).dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
      return {};
    });
  }
  auto text = detokenize_json(*tok, read_stdin(), "stdin");
  if (!text.ok()) return report_error(text.error());
  std::cout << *text;
  return 0;
}

}  // namespace

Command register_tokenize(CLI::App& root) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* app = root.add_subcommand("tokenize", "Print the token ids of the text on stdin");
  app->add_option("-m,--model", options->model_path,
                  "a GGUF file with a tokenizer "
                  "(default: the shipped gufo-tiny; $GUFO_MODEL, $GUFO_MODELS_DIR)");
  app->add_flag("--special", options->special, "match control tokens such as <|im_start|>");
  app->add_flag("--json", options->json_output, "print one JSON array");
  app->add_flag("--json-lines", options->json_lines,
                "stdin: one JSON string per line; stdout: one JSON array per line");
  app->add_flag("--no-bos", options->no_bos, "never add BOS, even if the model asks for it");
  return Command{app, [options] { return run_tokenize(*options); }};
}

Command register_detokenize(CLI::App& root) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* app = root.add_subcommand("detokenize", "Print the text of a JSON array of ids on stdin");
  app->add_option("-m,--model", options->model_path,
                  "a GGUF file with a tokenizer "
                  "(default: the shipped gufo-tiny; $GUFO_MODEL, $GUFO_MODELS_DIR)");
  app->add_flag("--json-lines", options->json_lines,
                "stdin: one JSON array per line; stdout: one JSON string per line");
  return Command{app, [options] { return run_detokenize(*options); }};
}

}  // namespace gufo::cli
