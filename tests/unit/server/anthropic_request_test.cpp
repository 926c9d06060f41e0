// parse_anthropic_request: an Anthropic conversation (system blocks, tool_use and
// tool_result, thinking) becomes the OpenAI-shaped messages the chat template reads; tools,
// tool_choice, thinking and the sampling fields map across; errors carry Anthropic's paths.
#include <gtest/gtest.h>

#include <string>

#include "server/anthropic_request.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

ParsedRequest parse(const std::string& json, bool count_only = false) {
  return parse_anthropic_request(ordered_json::parse(json), RequestLimits{.n_vocab = 1000}, count_only);
}

CompletionRequest ok(const ParsedRequest& r) {
  if (const auto* error = std::get_if<ApiError>(&r)) {
    ADD_FAILURE() << error->message;
    return {};
  }
  return std::get<CompletionRequest>(r);
}

std::string param_of(const ParsedRequest& r) {
  const auto* error = std::get_if<ApiError>(&r);
  if (error == nullptr) return "<accepted>";
  EXPECT_EQ(error->status, 400);
  if (!error->param.empty()) {
    EXPECT_EQ(error->message.rfind(error->param + ": ", 0), 0u) << error->message;  // the path leads
  }
  return error->param;
}

TEST(AnthropicRequest, AConversationBecomesTheTemplatesMessages) {
  const CompletionRequest r = ok(parse(R"({
    "model": "m", "max_tokens": 64,
    "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Use tools."}],
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should call it.", "signature": "x"},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "21C"}]},
        {"type": "text", "text": "Thanks"}]}],
    "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "any"}, "thinking": {"type": "disabled"},
    "stop_sequences": ["END"], "temperature": 0.5, "top_k": 7, "stream": true})"));
  const ordered_json want = ordered_json::parse(R"([
    {"role": "system", "content": "Be brief.\nUse tools."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "Checking.",
     "tool_calls": [{"id": "toolu_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}],
     "reasoning_content": "I should call it."},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "21C"},
    {"role": "user", "content": "Thanks"}])");
  EXPECT_EQ(r.messages, want);
  ASSERT_TRUE(r.tools.has_value());
  EXPECT_EQ((*r.tools)[0], ordered_json::parse(R"({"type": "function", "function":
      {"name": "get_weather", "description": "d", "parameters": {"type": "object"}}})"));
  EXPECT_EQ(r.tool_choice.mode, ToolChoice::Mode::Required);
  EXPECT_EQ(r.enable_thinking, false);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"END"}));
  EXPECT_FLOAT_EQ(r.sampler.temperature, 0.5f);
  EXPECT_EQ(r.sampler.top_k, 7);
  EXPECT_EQ(r.max_tokens, 64);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.chat);
}

TEST(AnthropicRequest, ToolChoicesMapToOpenAIs) {
  const std::string base = R"("model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
      "tools": [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}}])";
  EXPECT_EQ(ok(parse("{" + base + R"(, "tool_choice": {"type": "auto"}})")).tool_choice.mode, ToolChoice::Mode::Auto);
  const CompletionRequest none = ok(parse("{" + base + R"(, "tool_choice": {"type": "none"}})"));
  EXPECT_EQ(none.tool_choice.mode, ToolChoice::Mode::None);
  EXPECT_FALSE(none.tools.has_value());
  const CompletionRequest named = ok(parse("{" + base + R"(, "tool_choice": {"type": "tool", "name": "b"}})"));
  EXPECT_EQ(named.tool_choice.mode, ToolChoice::Mode::Named);
  EXPECT_EQ(named.callable_tools, (std::vector<std::string>{"b"}));
  // Anthropic's default temperature is 1, like OpenAI's; no thinking field: the template's default.
  const CompletionRequest plain = ok(parse("{" + base + "}"));
  EXPECT_FLOAT_EQ(plain.sampler.temperature, 1.0f);
  EXPECT_FALSE(plain.enable_thinking.has_value());
}

TEST(AnthropicRequest, CountTokensNeedsNoMaxTokens) {
  EXPECT_EQ(param_of(parse(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})")), "max_tokens");
  ok(parse(R"({"model": "m", "messages": [{"role": "user", "content": "x"}]})", /*count_only=*/true));
}

TEST(AnthropicRequest, ProblemsNameTheFieldByItsPath) {
  const std::string m = R"("model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}])";
  EXPECT_EQ(param_of(parse("[]")), "");
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 8, "messages": {}})")), "messages");
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 8, "messages": [{"role": "tool", "content": "x"}]})")), "messages.0.role");
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 8, "messages": [{"role": "user"}]})")), "messages.0.content");
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "image"}]}]})")),
            "messages.0.content.0.type");
  EXPECT_EQ(param_of(parse(
                R"({"max_tokens": 8, "messages": [{"role": "assistant", "content": [{"type": "tool_result"}]}]})")),
            "messages.0.content.0.type");  // tool results come from the user
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 8, "messages": [{"role": "assistant", "content": [
      {"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}]})")),
            "messages.0.content.0.input");
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image"}]}]}]})")),
            "messages.0.content.0.content.0");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "system": 5})")), "system");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "tools": [{"name": "f"}]})")), "tools.0.input_schema");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "tool_choice": {"type": "some"}})")), "tool_choice.type");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "thinking": {"type": "maybe"}})")), "thinking.type");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "temperature": 1.2})")), "temperature");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "stop_sequences": [3]})")), "stop_sequences");
  EXPECT_EQ(param_of(parse("{" + m + R"(, "top_p": "x"})")), "top_p");
  EXPECT_EQ(param_of(parse(R"({"max_tokens": 0, "messages": [{"role": "user", "content": "x"}]})")), "max_tokens");
}

}  // namespace
}  // namespace gufo::server
