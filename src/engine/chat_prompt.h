// A model's chat template, ready to turn OpenAI-shaped messages into prompt tokens: the
// template from the GGUF (tokenizer.chat_template), its bos/eos texts, and the BOS rule
// (added when the vocabulary asks for it, unless the template already printed it, as
// Llama 3's does). Used by Chat (`gufo chat`) and the server. Tested through
// tests/unit/engine/chat_test.cpp and the server tests.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/model.h"
#include "template/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {

struct PromptInputs {
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  std::optional<nlohmann::ordered_json> tools;
  std::optional<bool> enable_thinking;  // unset: the template's default
  bool add_generation_prompt = true;
};

class ChatPrompt {
 public:
  // Fails (naming the file) when the GGUF has no usable chat template.
  static Result<ChatPrompt> load(const Model& model, const tokenizer::Tokenizer& tokenizer);

  Result<std::string> text(const PromptInputs& inputs) const;
  Result<std::vector<int32_t>> tokens(const PromptInputs& inputs) const;
  // The template's text as the GGUF holds it (what it teaches the model, e.g. a tool syntax).
  const std::string& template_source() const { return template_.source(); }

 private:
  ChatPrompt(std::string file_name, const tokenizer::Tokenizer& tokenizer, tmpl::ChatTemplate chat_template,
             std::string bos_text, std::string eos_text)
      : file_name_(std::move(file_name)),
        tokenizer_(&tokenizer),
        template_(std::move(chat_template)),
        bos_text_(std::move(bos_text)),
        eos_text_(std::move(eos_text)) {}

  std::string file_name_;
  const tokenizer::Tokenizer* tokenizer_;
  tmpl::ChatTemplate template_;
  std::string bos_text_;
  std::string eos_text_;
};

}  // namespace gufo::engine
