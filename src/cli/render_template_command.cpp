// `gufo render-template -m M.gguf --messages MSGS.json`: the model's chat template applied to
// OpenAI-shaped messages, printed exactly (no newline added). --template FILE overrides the
// GGUF's template. Tested by tests/unit/template/cli_test.cpp.
#include <nlohmann/json.hpp>

#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>

#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/read_file.h"
#include "gguf/file.h"
#include "template/chat_template.h"
#include "tokenizer/vocab.h"

namespace gufo::cli {

namespace {

using nlohmann::ordered_json;

struct RenderTemplateOptions {
  std::string model_path;
  std::string messages_path;
  std::string tools_path;
  std::string template_path;
  bool no_thinking = false;
  bool no_generation_prompt = false;
};

Result<ordered_json> read_json(const std::string& path) {
  GUFO_ASSIGN_OR_RETURN(std::string text, read_file(path));
  ordered_json json = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return Error{path + ": invalid JSON"};
  auto depth = tmpl::check_json_depth(json);
  if (!depth.ok()) return Error{path + ": " + depth.error().message};
  return json;
}

// The template and the BOS/EOS text: from the GGUF, the template possibly from --template.
struct TemplateSource {
  std::string text;
  std::string name;  // what errors name
  std::string bos_token;
  std::string eos_token;
};

Result<TemplateSource> load_template(const RenderTemplateOptions& options) {
  TemplateSource source;
  if (!options.model_path.empty()) {
    GUFO_ASSIGN_OR_RETURN(gguf::File file, gguf::File::open(options.model_path));
    GUFO_ASSIGN_OR_RETURN(source.bos_token, tokenizer::special_token_text(file, "tokenizer.ggml.bos_token_id"));
    GUFO_ASSIGN_OR_RETURN(source.eos_token, tokenizer::special_token_text(file, "tokenizer.ggml.eos_token_id"));
    if (options.template_path.empty()) {
      if (!file.has("tokenizer.chat_template")) {
        return Error{options.model_path + ": no tokenizer.chat_template in the metadata (use --template FILE)"};
      }
      GUFO_ASSIGN_OR_RETURN(std::string_view text, file.get_string("tokenizer.chat_template"));
      source.text = std::string(text);
      source.name = options.model_path;
    }
  }
  if (!options.template_path.empty()) {
    GUFO_ASSIGN_OR_RETURN(source.text, read_file(options.template_path));
    source.name = options.template_path;
  }
  return source;
}

Result<std::string> render(const RenderTemplateOptions& given) {
  RenderTemplateOptions options = given;
  if (options.model_path.empty() && options.template_path.empty()) {
    GUFO_ASSIGN_OR_RETURN(options.model_path, model_or_default(""));
  }
  GUFO_ASSIGN_OR_RETURN(ordered_json input, read_json(options.messages_path));
  tmpl::ChatInputs inputs;
  if (input.is_object()) {
    if (!input.contains("messages")) return Error{options.messages_path + ": no \"messages\" array"};
    inputs.messages = std::move(input["messages"]);
    if (input.contains("tools") && !input["tools"].is_null()) inputs.tools = std::move(input["tools"]);
  } else {
    inputs.messages = std::move(input);
  }
  if (!inputs.messages.is_array()) {
    return Error{options.messages_path + ": expected a JSON array of messages (or {\"messages\": [...]})"};
  }
  if (!options.tools_path.empty()) {
    GUFO_ASSIGN_OR_RETURN(ordered_json tools, read_json(options.tools_path));
    if (!tools.is_array()) return Error{options.tools_path + ": expected a JSON array of tools"};
    inputs.tools = std::move(tools);
  }
  if (inputs.tools && !inputs.tools->is_array()) {
    return Error{options.messages_path + ": \"tools\" must be a JSON array"};
  }
  inputs.add_generation_prompt = !options.no_generation_prompt;
  if (options.no_thinking) inputs.enable_thinking = false;

  GUFO_ASSIGN_OR_RETURN(TemplateSource source, load_template(options));
  inputs.bos_token = source.bos_token;
  inputs.eos_token = source.eos_token;
  auto parsed = tmpl::ChatTemplate::parse(source.text);
  if (!parsed.ok()) return Error{source.name + ": " + parsed.error().message};
  auto text = tmpl::render_chat(*parsed, inputs);
  if (!text.ok()) return Error{source.name + ": " + text.error().message};
  return std::move(text).value();
}

}  // namespace

Command register_render_template(CLI::App& root) {
  auto options = std::make_shared<RenderTemplateOptions>();
  CLI::App* app = root.add_subcommand("render-template", "Print the chat template applied to OpenAI-shaped messages");
  app->add_option("-m,--model", options->model_path,
                  "a GGUF file with tokenizer.chat_template (default, without --template: the shipped gufo-tiny)");
  app->add_option("--messages", options->messages_path,
                  "JSON: an array of messages, or {\"messages\": [...], \"tools\": [...]}")
      ->required();
  app->add_option("--tools", options->tools_path, "JSON array of tools (OpenAI shape)");
  app->add_option("--template", options->template_path, "a Jinja2 template file to use instead");
  app->add_flag("--no-thinking", options->no_thinking, "set enable_thinking to false");
  app->add_flag("--no-generation-prompt", options->no_generation_prompt, "do not add the assistant prompt at the end");
  return Command{app, [options] {
                   auto text = render(*options);
                   if (!text.ok()) return report_error(text.error());
                   std::cout << *text << std::flush;
                   return 0;
                 }};
}

}  // namespace gufo::cli
