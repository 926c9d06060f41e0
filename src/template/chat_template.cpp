// ChatTemplate: parse once (lexer.cpp, parser.cpp), render many times (interpreter.cpp).
// Tested by tests/unit/template/template_test.cpp and chat_template_test.cpp.
#include "template/chat_template.h"

#include "template/ast.h"
#include "template/builtins.h"
#include "template/interpreter.h"
#include "template/lexer.h"
#include "template/parser.h"

namespace gufo::tmpl {

Result<ChatTemplate> ChatTemplate::parse(std::string source) {
  GUFO_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize_template(source));
  GUFO_ASSIGN_OR_RETURN(Body body, parse_template(tokens));
  ChatTemplate result;
  result.source_ = std::move(source);
  result.body_ = std::make_shared<const Body>(std::move(body));
  return result;
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& variables, const RenderLimits& limits) const {
  if (!variables.is_object()) return Error{"chat template: variables must be a JSON object"};
  auto globals = std::make_shared<Scope>();
  add_global_functions(*globals);
  GUFO_RETURN_IF_ERROR(check_json_depth(variables));
  for (const auto& [key, value] : variables.items()) {
    auto converted = Value::from_json(value, 1);
    if (!converted.ok()) return Error{"chat template: variable '" + key + "': " + converted.error().message};
    globals->vars[key] = std::move(converted).value();
  }
  return render_body(*body_, globals, limits);
}

Status check_json_depth(const nlohmann::ordered_json& json) {
  // Iterative, so that a hostile document cannot overflow the stack here either.
  std::vector<std::pair<const nlohmann::ordered_json*, int>> stack = {{&json, 0}};
  while (!stack.empty()) {
    const auto [node, depth] = stack.back();
    stack.pop_back();
    if (depth > kMaxValueDepth) {
      return Error{"JSON nested deeper than " + std::to_string(kMaxValueDepth) + " levels"};
    }
    if (node->is_array() || node->is_object()) {
      for (const auto& child : *node) stack.emplace_back(&child, depth + 1);
    }
  }
  return ok_status();
}

Result<std::string> render_chat(const ChatTemplate& chat_template, const ChatInputs& inputs) {
  if (!inputs.messages.is_array()) return Error{"chat template: messages must be a JSON array"};
  GUFO_RETURN_IF_ERROR(check_json_depth(inputs.messages));
  if (inputs.tools) GUFO_RETURN_IF_ERROR(check_json_depth(*inputs.tools));
  GUFO_RETURN_IF_ERROR(check_json_depth(inputs.extra));
  nlohmann::ordered_json variables = nlohmann::ordered_json::object();
  if (inputs.extra.is_object()) {
    for (const auto& [key, value] : inputs.extra.items()) variables[key] = value;
  }
  variables["messages"] = inputs.messages;
  if (inputs.tools) variables["tools"] = *inputs.tools;
  variables["add_generation_prompt"] = inputs.add_generation_prompt;
  if (inputs.enable_thinking) variables["enable_thinking"] = *inputs.enable_thinking;
  variables["bos_token"] = inputs.bos_token;
  variables["eos_token"] = inputs.eos_token;
  return chat_template.render(variables);
}

}  // namespace gufo::tmpl
