// Chat (see chat.h).
#include "engine/chat.h"

#include <algorithm>
#include <utility>

namespace gufo::engine {

using nlohmann::ordered_json;

Chat::Chat(Session session, const tokenizer::Tokenizer& tokenizer, ChatOptions options, ChatPrompt prompt)
    : session_(std::move(session)), tokenizer_(&tokenizer), options_(std::move(options)), prompt_(std::move(prompt)) {
  reset();
}

Result<Chat> Chat::create(const Model& model, Session session, const tokenizer::Tokenizer& tokenizer,
                          ChatOptions options) {
  GUFO_ASSIGN_OR_RETURN(ChatPrompt prompt, ChatPrompt::load(model, tokenizer));
  return Chat(std::move(session), tokenizer, std::move(options), std::move(prompt));
}

void Chat::reset() {
  messages_ = ordered_json::array();
  if (!options_.system_prompt.empty()) {
    messages_.push_back({{"role", "system"}, {"content", options_.system_prompt}});
  }
  // The cache keeps its tokens: the next render shares at least the system prompt with them.
}

Status Chat::save(const std::string& path, const SessionIdentity& identity) const {
  if (cached_.empty()) return Error{path + ": nothing to save yet (no message has been answered)"};
  const SessionState state{
      .tokens = cached_, .generator = generator_, .note = ordered_json{{"messages", messages_}}.dump()};
  return save_session(path, session_, state, identity);
}

Status Chat::resume(const std::string& path, const SessionIdentity& identity) {
  reset();
  cached_.clear();
  GUFO_ASSIGN_OR_RETURN(LoadedSession loaded, load_session(path, session_, identity));
  const ordered_json note = ordered_json::parse(loaded.state.note, nullptr, /*allow_exceptions=*/false);
  const bool is_chat = note.is_object() && note.contains("messages") && note["messages"].is_array() &&
                       std::all_of(note["messages"].begin(), note["messages"].end(), [](const ordered_json& m) {
                         return m.is_object() && m.contains("role") && m["role"].is_string() && m.contains("content") &&
                                m["content"].is_string();
                       });
  if (!is_chat) {
    session_.rewind(0);
    return Error{path + ": not a chat session (no messages in it; gufo run --session continues a run)"};
  }
  messages_ = note["messages"];
  generator_ = std::move(loaded.state.generator);
  cached_.assign(loaded.state.tokens.begin(), loaded.state.tokens.begin() + loaded.n_kv);
  return {};
}

Result<std::vector<int32_t>> Chat::render_prompt() const {
  PromptInputs inputs;
  inputs.messages = messages_;
  inputs.enable_thinking = options_.enable_thinking;
  return prompt_.tokens(inputs);
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
  generate.generator_state = generator_;
  generate.earlier = std::span<const int32_t>(*prompt).first(common);  // earlier turns
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
  generator_ = turn.result.generator_state;
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
