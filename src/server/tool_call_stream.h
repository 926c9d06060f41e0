// Tool calls as they stream: the text of a chat answer's calls (from the first call opening
// on), read piece by piece in the syntax the tool grammar forces on it (tool_grammar.h):
//   Hermes:  <tool_call>\n{"name": "NAME", "arguments": ARGS}\n</tool_call> (repeated, "\n" apart)
//   Llama 3: {"name": "NAME", "parameters": ARGS}   (after an optional <|python_tag|>)
// Each call is announced (a fresh id and its name) with the first byte of its arguments, then
// the arguments follow as the model writes them, without the blanks outside strings: the
// pieces of a call concatenate to one JSON object's text, the `arguments` string OpenAI's
// client assembles.
// Text off that shape (possible only without the grammar) ends the stream: what was announced
// stays, nothing more comes.
// Tested by tests/unit/server/tool_call_stream_test.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_calls.h"

namespace gufo::server {

// One piece of a streamed call: its first piece carries the id and the name (and perhaps some
// arguments), later ones more of the arguments only.
struct ToolCallDelta {
  int index = 0;  // the call's place in the answer, from 0
  std::string id;
  std::string name;
  std::string arguments;
};

class ToolCallStream {
 public:
  explicit ToolCallStream(ToolSyntax syntax) : syntax_(syntax) {}
  // The deltas that `text`, the next piece of the calls' text, completes.
  std::vector<ToolCallDelta> feed(std::string_view text);
  // Whether the text so far left the calls' shape, or stop() was called: no more deltas come.
  bool broken() const { return state_ == State::Broken; }
  void stop() { state_ = State::Broken; }
  // Calls announced so far.
  int calls() const { return calls_; }
  // Whether the text so far ends between calls (every announced call closed).
  bool between_calls() const { return state_ == State::Opening && pending_.empty(); }

  // Whether bytes read are a literal whole, its start so far, or off it.
  enum class Match : uint8_t { Whole, Prefix, No };

 private:
  enum class State : uint8_t { Opening, Head, Arguments, Closing, Broken };
  // Each consumes from `text` at `at`, appending to `out`; false: wait for more text.
  bool opening(std::string_view text, size_t& at);
  bool head(std::string_view text, size_t& at);
  bool arguments(std::string_view text, size_t& at, std::vector<ToolCallDelta>& out);
  bool closing(std::string_view text, size_t& at);
  // Reads the text's bytes into pending_ while they follow `literal`.
  Match read_literal(std::string_view text, size_t& at, std::string_view literal);
  // After a literal: on to `next` once it is whole (pending_ cleared), Broken if the text left it.
  bool after_literal(Match read, State next);

  ToolSyntax syntax_;
  State state_ = State::Opening;
  std::string pending_;  // Opening, Head, Closing: the bytes of the literal part read so far
  std::string name_;     // Arguments: the name of the call their first byte announces
  int calls_ = 0;
  // Arguments: the JSON value's nesting depth, and whether inside a string (after a backslash).
  int depth_ = 0;
  bool in_string_ = false;
  bool escaped_ = false;
};

// A delta added to the calls it continues, as a client assembles them (a first delta starts a call).
void append_delta(std::vector<ToolCall>& calls, const ToolCallDelta& delta);

// The calls that a whole calls text streams, assembled as a client assembles the deltas; none
// when the text is not whole calls of that shape.
std::optional<std::vector<ToolCall>> calls_as_streamed(std::string_view text, ToolSyntax syntax);

}  // namespace gufo::server
