// ChatTemplate: the public API of gufo_template. Parses a Jinja2 chat template (as found in
// tokenizer_config.json / GGUF tokenizer.chat_template) once, then renders OpenAI-shaped
// messages into prompt text, with the variables transformers' apply_chat_template passes.
// Tested by tests/unit/template/template_test.cpp and chat_template_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "template/interpreter.h"

namespace gufo::tmpl {

struct Stmt;

struct ChatInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();  // passed as given
  std::optional<nlohmann::ordered_json> tools;                        // a JSON array, or unset (undefined)
  bool add_generation_prompt = true;
  std::optional<bool> enable_thinking;  // unset: the variable is left undefined
  std::string bos_token;
  std::string eos_token;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // more template variables
};

class ChatTemplate {
 public:
  // Lexes and parses `source`; syntax errors and unsupported tags come back here.
  static Result<ChatTemplate> parse(std::string source);

  // Renders any template variables (a JSON object) to text, within `limits`.
  Result<std::string> render(const nlohmann::ordered_json& variables, const RenderLimits& limits = {}) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

// Fails when `json` nests deeper than the interpreter accepts (kMaxValueDepth); iterative, so
// callers can check untrusted JSON before anything copies it recursively.
Status check_json_depth(const nlohmann::ordered_json& json);

// messages, tools, add_generation_prompt, enable_thinking, bos_token, eos_token and `extra`.
Result<std::string> render_chat(const ChatTemplate& chat_template, const ChatInputs& inputs);

}  // namespace gufo::tmpl
