// Chat (see chat.h).
#include "engine/chat.h"

#include <algorithm>
#include <utility>

namespace gufo::engine {

using nlohmann::ordered_json;

Chat::Chat(const Model& model, Session session, const tokenizer::Tokenizer& tokenizer, ChatOptions options,
           tmpl::ChatTemplate chat_template, std::string bos_text, std::string eos_text)
    : model_(&model),
      session_(std::move(session)),
      tokenizer_(&tokenizer),
      options_(std::move(options)),
      template_(std::move(chat_template)),
      bos_text_(std::move(bos_text)),
      eos_text_(std::move(eos_text)) {
  reset();
}

Result<Chat> Chat::create(const Model& model, Session session, const tokenizer::Tokenizer& tokenizer,
                          ChatOptions options) {
  const gguf::File& file = model.file();
  if (!file.has("tokenizer.chat_template")) {
    return Error{file.name() + ": no tokenizer.chat_template in the metadata; chat needs one"};
  }
  GUFO_ASSIGN_OR_RETURN(std::string_view source, file.get_string("tokenizer.chat_template"));
  auto parsed = tmpl::ChatTemplate::parse(std::string(source));
  if (!parsed.ok()) return Error{file.name() + ": tokenizer.chat_template: " + parsed.error().message};
  GUFO_ASSIGN_OR_RETURN(std::string bos, tokenizer::special_token_text(file, "tokenizer.ggml.bos_token_id"));
  GUFO_ASSIGN_OR_RETURN(std::string eos, tokenizer::special_token_text(file, "tokenizer.ggml.eos_token_id"));
  return Chat(model, std::move(session), tokenizer, std::move(options), std::move(parsed).value(), std::move(bos),
              std::move(eos));
}

void Chat::reset() {
  messages_ = ordered_json::array();
  if (!options_.system_prompt.empty()) {
    messages_.push_back({{"role", "system"}, {"content", options_.system_prompt}});
  }
  // The cache keeps its tokens: the next render shares at least the system prompt with them.
}

Result<std::vector<int32_t>> Chat::render_prompt() const {
  tmpl::ChatInputs inputs;
  inputs.messages = messages_;
  inputs.add_generation_prompt = true;
  inputs.enable_thinking = options_.enable_thinking;
  inputs.bos_token = bos_text_;
  inputs.eos_token = eos_text_;
  auto text = tmpl::render_chat(template_, inputs);
  if (!text.ok()) return Error{model_->file().name() + ": tokenizer.chat_template: " + text.error().message};
  std::vector<int32_t> tokens;
  const tokenizer::Vocab& vocab = tokenizer_->vocab();
  // NOTE(chat): templates that print bos_token themselves (Llama 3) must not get a second one.
  const bool template_has_bos = !bos_text_.empty() && text->starts_with(bos_text_);
  if (vocab.add_bos && vocab.bos_id >= 0 && !template_has_bos) tokens.push_back(vocab.bos_id);
  const std::vector<int32_t> body = tokenizer_->encode(*text, /*parse_special=*/true);
  tokens.insert(tokens.end(), body.begin(), body.end());
  return tokens;
}

Result<ChatTurn> Chat::reply(std::string_view user_text, const std::function<void(std::string_view)>& on_text,
                             const std::atomic<bool>* cancel) {
  messages_.push_back({{"role", "user"}, {"content", std::string(user_text)}});
  auto prompt = render_prompt();
  const int64_t n_ctx = session_.context_size();
  if (prompt.ok() && static_cast<int64_t>(prompt->size()) >= n_ctx) {
    prompt = Error{"the conversation is " + std::to_string(prompt->size()) + " tokens, the context only " +
                   std::to_string(n_ctx) + " (start over with /reset, or a larger --ctx)"};
  }
  if (!prompt.ok()) {
    messages_.erase(messages_.end() - 1);  // the conversation stays as it was
    return prompt.error();
  }

  // Reuse the cached prefix; evaluate at least one token so there are logits to sample.
  size_t common = 0;
  const size_t limit = std::min(prompt->size() - 1, static_cast<size_t>(session_.n_past()));
  while (common < limit && common < cached_.size() && cached_[common] == (*prompt)[common]) ++common;
  session_.rewind(static_cast<int32_t>(common));
  cached_.resize(common);
  last_prefill_ = prompt->size() - common;

  GenerateOptions generate = options_.generate;
  generate.cancel = cancel;
  ChatTurn turn;
  auto result = engine::generate(session_, *tokenizer_, std::span<const int32_t>(*prompt).subspan(common), generate,
                                 [&](std::string_view text) {
                                   turn.text += text;
                                   on_text(text);
                                 });
  if (!result.ok()) {
    messages_.erase(messages_.end() - 1);
    session_.rewind(static_cast<int32_t>(common));
    return result.error();
  }
  turn.result = std::move(result).value();
  // The cache now holds the prompt and the generated tokens that were evaluated (all but
  // the last one, unless generation was cancelled).
  cached_ = std::move(prompt).value();
  const size_t n_generated_cached = static_cast<size_t>(session_.n_past()) - cached_.size();
  cached_.insert(cached_.end(), turn.result.tokens.begin(),
                 turn.result.tokens.begin() + static_cast<std::ptrdiff_t>(n_generated_cached));
  messages_.push_back({{"role", "assistant"}, {"content", turn.text}});
  return turn;
}

}  // namespace gufo::engine
