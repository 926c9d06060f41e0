// ChatPrompt (see chat_prompt.h).
#include "engine/chat_prompt.h"

#include <utility>

namespace gufo::engine {

Result<ChatPrompt> ChatPrompt::load(const Model& model, const tokenizer::Tokenizer& tokenizer) {
  const gguf::File& file = model.file();
  if (!file.has("tokenizer.chat_template")) {
    return Error{file.name() + ": no tokenizer.chat_template in the metadata; chat needs one"};
  }
  GUFO_ASSIGN_OR_RETURN(std::string_view source, file.get_string("tokenizer.chat_template"));
  auto parsed = tmpl::ChatTemplate::parse(std::string(source));
  if (!parsed.ok()) return Error{file.name() + ": tokenizer.chat_template: " + parsed.error().message};
  GUFO_ASSIGN_OR_RETURN(std::string bos, tokenizer::special_token_text(file, "tokenizer.ggml.bos_token_id"));
  GUFO_ASSIGN_OR_RETURN(std::string eos, tokenizer::special_token_text(file, "tokenizer.ggml.eos_token_id"));
  return ChatPrompt(file.name(), tokenizer, std::move(parsed).value(), std::move(bos), std::move(eos));
}

Result<std::string> ChatPrompt::text(const PromptInputs& inputs) const {
  tmpl::ChatInputs chat_inputs;
  chat_inputs.messages = inputs.messages;
  chat_inputs.tools = inputs.tools;
  chat_inputs.add_generation_prompt = inputs.add_generation_prompt;
  chat_inputs.enable_thinking = inputs.enable_thinking;
  chat_inputs.bos_token = bos_text_;
  chat_inputs.eos_token = eos_text_;
  auto text = tmpl::render_chat(template_, chat_inputs);
  if (!text.ok()) return Error{file_name_ + ": tokenizer.chat_template: " + text.error().message};
  return text;
}

Result<std::vector<int32_t>> ChatPrompt::tokens(const PromptInputs& inputs) const {
  GUFO_ASSIGN_OR_RETURN(std::string rendered, text(inputs));
  std::vector<int32_t> tokens;
  const tokenizer::Vocab& vocab = tokenizer_->vocab();
  // NOTE(chat): templates that print bos_token themselves (Llama 3) must not get a second one.
  const bool template_has_bos = !bos_text_.empty() && rendered.starts_with(bos_text_);
  if (vocab.add_bos && vocab.bos_id >= 0 && !template_has_bos) tokens.push_back(vocab.bos_id);
  const std::vector<int32_t> body = tokenizer_->encode(rendered, /*parse_special=*/true);
  tokens.insert(tokens.end(), body.begin(), body.end());
  return tokens;
}

}  // namespace gufo::engine
