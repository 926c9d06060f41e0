// Reasoning in Qwen3's (and DeepSeek-R1's) format: the model thinks inside
//   <think>\n...\n</think>\n\n
// before it answers. OpenAI-compatible servers (llama.cpp's `--reasoning-format deepseek`, its
// default, and vLLM's reasoning parsers) return the thoughts as message.reasoning_content
// (delta.reasoning_content while streaming) and only the answer as content, so agents and chat
// apps neither show nor parse the thoughts as the answer. Used for chat completions unless
// `--reasoning-format none` or the request's `reasoning_format: "none"` asks for the raw text.
// Tested by tests/unit/server/reasoning_test.cpp and tests/functional/reasoning.test.mjs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gufo::server {

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

// Splits one answer's text, fed in pieces as it is generated, into reasoning and content.
// Thoughts are recognised only at the very start of the answer (after whitespace), or from
// the first byte when the prompt already opened the block (templates such as Qwen3-Thinking
// end the generation prompt with "<think>\n"). Whitespace between the tags and the text
// (and after "</think>") is dropped; anything else passes through byte for byte. Text that
// could still turn out to be a tag, or trailing whitespace inside the thoughts, is held back
// until the next piece or finish() decides it. An unclosed block (the answer was cut by
// max_tokens) is all reasoning.
class ReasoningSplitter {
 public:
  explicit ReasoningSplitter(bool prompt_opened_thinking = false);

  ReasoningDelta feed(std::string_view text);
  // The end of the answer: whatever was held back.
  ReasoningDelta finish();

 private:
  enum class State { Start, ReasoningStart, Reasoning, ContentStart, Content };
  State state_;
  std::string held_;
  // held_ starts with this many whitespace bytes that earlier pieces already looked at, so a
  // long run of whitespace is not rescanned with every token (only Start and Reasoning hold
  // whitespace across pieces).
  size_t held_spaces_ = 0;
};

// The whole answer at once: feed(text) then finish().
ReasoningDelta split_reasoning(std::string_view text, bool prompt_opened_thinking = false);

// Whether a rendered prompt leaves a thinking block open for the model to continue (its
// text, trailing whitespace aside, ends with "<think>").
bool prompt_opens_thinking(std::string_view prompt_tail);
// Whether it ends with a closed "<think>...</think>" (Qwen3's template with enable_thinking
// false): the answer comes without thoughts.
bool prompt_closes_thinking(std::string_view prompt_tail);

// `--reasoning-format` and the request's `reasoning_format`, with llama.cpp's values: "none"
// (false: the raw text is the content), "deepseek" or "auto" (true: split); nullopt for
// anything else.
std::optional<bool> parse_reasoning_format(std::string_view name);
// Those values, for error messages.
inline constexpr std::string_view kReasoningFormatNames = "none, deepseek or auto";

}  // namespace gufo::server
