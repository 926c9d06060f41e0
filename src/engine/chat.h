// A multi-turn conversation with one model: the messages so far, rendered with the model's
// chat template each turn. The KV cache keeps the tokens of the previous render; each turn
// only the tokens after the longest common prefix are evaluated (a template that rewrites
// earlier turns, such as Qwen3 dropping old <think> blocks, costs a partial re-prefill, not
// wrong output). Used by `gufo chat`; the server builds its own prompts.
// Tested by tests/unit/engine/chat_test.cpp.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "engine/chat_prompt.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/session_file.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {

struct ChatOptions {
  std::string system_prompt;            // empty: no system message
  std::optional<bool> enable_thinking;  // unset: the template's default
  GenerateOptions generate;
};

struct ChatTurn {
  std::string text;  // the assistant's answer as shown (and as kept in the history)
  GenerateResult result;
};

class Chat {
 public:
  // The template and BOS/EOS texts come from the model's GGUF (tokenizer.chat_template).
  static Result<Chat> create(const Model& model, Session session, const tokenizer::Tokenizer& tokenizer,
                             ChatOptions options);

  // Adds the user's message, generates the answer (streamed through on_text) and adds it.
  // `cancel`, when set to true (e.g. from a SIGINT handler), ends the answer after the
  // current token; the partial answer stays in the history.
  Result<ChatTurn> reply(std::string_view user_text, const std::function<void(std::string_view)>& on_text,
                         const std::atomic<bool>* cancel = nullptr);

  // Forgets the conversation (the system prompt stays).
  void reset();
  // gufo chat --session: saves the messages, the tokens the cache holds and their keys and
  // values and the sampler's generator (engine/session_file.h; the note is {"messages": [...]}),
  // and takes them back; a resumed chat answers the next message as the chat that never
  // stopped would. A failed resume leaves the conversation empty, the system prompt aside.
  Status save(const std::string& path, const SessionIdentity& identity) const;
  Status resume(const std::string& path, const SessionIdentity& identity);

  const nlohmann::ordered_json& messages() const { return messages_; }
  // Tokens the KV cache holds, in order (the last render plus the generated tokens).
  const std::vector<int32_t>& cached_tokens() const { return cached_; }
  // Tokens evaluated by the last reply (the part after the reused prefix).
  size_t last_prefill_tokens() const { return last_prefill_; }

 private:
  Chat(Session session, const tokenizer::Tokenizer& tokenizer, ChatOptions options, ChatPrompt prompt);
  Result<std::vector<int32_t>> render_prompt() const;

  Session session_;
  const tokenizer::Tokenizer* tokenizer_;
  ChatOptions options_;
  ChatPrompt prompt_;
  nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
  std::vector<int32_t> cached_;
  size_t last_prefill_ = 0;
  // The sampler's generator after the last answer: each answer draws on from where the last
  // left off (as one llama.cpp sampler does), so two turns never repeat the same draws.
  std::string generator_;
};

}  // namespace gufo::engine
