// parse_completion_request: OpenAI's defaults, every supported field read with its type and
// range checked (the error names the field), content parts joined, developer -> system,
// unknown fields ignored, bounds on messages, stop, n and logit_bias.
#include <gtest/gtest.h>

#include <string>

#include "server/openai_request.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

ParsedRequest chat(const std::string& json, RequestLimits limits = {.n_vocab = 1000}) {
  return parse_completion_request(ordered_json::parse(json), true, limits);
}

CompletionRequest ok(const ParsedRequest& r) {
  if (std::holds_alternative<ApiError>(r)) {
    ADD_FAILURE() << std::get<ApiError>(r).message;
    return {};
  }
  return std::get<CompletionRequest>(r);
}

std::string param_of(const ParsedRequest& r) {
  if (!std::holds_alternative<ApiError>(r)) return "<accepted>";
  EXPECT_EQ(std::get<ApiError>(r).status, 400);
  return std::get<ApiError>(r).param;
}

TEST(OpenAiRequest, DefaultsAreOpenAis) {
  const CompletionRequest r = ok(chat(R"({"model": "m", "messages": [{"role": "user", "content": "hi"}]})"));
  EXPECT_EQ(r.model, "m");
  EXPECT_FLOAT_EQ(r.sampler.temperature, 1.0f);
  EXPECT_FLOAT_EQ(r.sampler.top_p, 1.0f);
  EXPECT_EQ(r.sampler.top_k, 0);
  EXPECT_FLOAT_EQ(r.sampler.min_p, 0.0f);
  EXPECT_FLOAT_EQ(r.sampler.repeat_penalty, 1.0f);
  EXPECT_EQ(r.n, 1);
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.max_tokens.has_value());
  EXPECT_FALSE(r.seeded);
  EXPECT_FALSE(r.logprobs);
  EXPECT_FALSE(r.separate_reasoning.has_value());  // the server's --reasoning-format decides
}

TEST(OpenAiRequest, ReadsEverySupportedField) {
  const CompletionRequest r = ok(chat(R"({
    "messages": [{"role": "developer", "content": "be brief"},
                 {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
                 {"role": "assistant", "content": null, "tool_calls": [{"id": "1", "type": "function",
                   "function": {"name": "f", "arguments": "{}"}}]},
                 {"role": "tool", "content": "42", "tool_call_id": "1"}],
    "max_completion_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 20, "min_p": 0.1,
    "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1, "seed": 42,
    "stop": ["x", "y"], "n": 3, "logprobs": true, "top_logprobs": 4, "logit_bias": {"5": -100, "17": 2.5},
    "stream": true, "stream_options": {"include_usage": true}, "user": "u",
    "tools": [{"type": "function", "function": {"name": "f"}}],
    "chat_template_kwargs": {"enable_thinking": false}, "reasoning_format": "none",
    "some_future_field": [1, 2]})"));
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0]["role"], "system");
  EXPECT_EQ(r.messages[1]["content"], "a\nb");
  EXPECT_EQ(r.messages[2]["content"], "");
  EXPECT_TRUE(r.messages[2].contains("tool_calls"));
  EXPECT_EQ(r.messages[3]["tool_call_id"], "1");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampler.temperature, 0.5f);
  EXPECT_EQ(r.sampler.top_k, 20);
  EXPECT_FLOAT_EQ(r.sampler.frequency_penalty, -0.5f);
  EXPECT_EQ(r.sampler.seed, 42u);
  EXPECT_TRUE(r.seeded);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(r.n, 3);
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 4);
  ASSERT_EQ(r.sampler.logit_bias.size(), 2u);
  EXPECT_EQ(r.sampler.logit_bias[1].first, 17);
  EXPECT_FLOAT_EQ(r.sampler.logit_bias[1].second, 2.5f);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  ASSERT_TRUE(r.tools.has_value());
  EXPECT_EQ(r.enable_thinking, false);
  EXPECT_EQ(r.separate_reasoning, false);
}

TEST(OpenAiRequest, WrongTypesAndValuesNameTheField) {
  const std::string m = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(param_of(chat("{}")), "messages");
  EXPECT_EQ(param_of(chat(R"({"messages": {}})")), "messages");
  EXPECT_EQ(param_of(chat(R"({"messages": [1]})")), "messages[0]");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user"}]})")), "messages[0].content");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})")),
            "messages[0].content[0].text");
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})")),
            "messages[0].tool_calls");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "temperature": "1"})")), "temperature");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "temperature": -0.1})")), "temperature");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "top_p": 1.5})")), "top_p");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "max_tokens": 0})")), "max_tokens");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "max_tokens": true})")), "max_tokens");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "n": 129})")), "n");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "stop": ""})")), "stop");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "stream_options": {"include_usage": 1}})")), "stream_options.include_usage");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "logit_bias": {"1000": 1}})")), "logit_bias");  // past the vocabulary
  EXPECT_EQ(param_of(chat("{" + m + R"(, "logit_bias": {"-1": 1}})")), "logit_bias");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "logit_bias": {"3": "x"}})")), "logit_bias");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "top_logprobs": 2})")), "top_logprobs");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "model": 5})")), "model");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "chat_template_kwargs": {"enable_thinking": "no"}})")),
            "chat_template_kwargs.enable_thinking");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "reasoning_format": "hidden"})")), "reasoning_format");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "reasoning_format": false})")), "reasoning_format");
  EXPECT_EQ(ok(chat("{" + m + R"(, "reasoning_format": "auto"})")).separate_reasoning, true);
  EXPECT_EQ(param_of(parse_completion_request(ordered_json::array(), true, {})), "");
}

TEST(OpenAiRequest, BoundsAreEnforced) {
  RequestLimits limits{.max_messages = 2,
                       .max_n = 4,
                       .max_stop = 2,
                       .max_stop_length = 4,
                       .max_top_logprobs = 20,
                       .max_logit_bias = 1,
                       .n_vocab = 100};
  EXPECT_EQ(param_of(chat(R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"},
                                           {"role": "user", "content": "c"}]})",
                          limits)),
            "messages");
  const std::string m = R"("messages": [{"role": "user", "content": "hi"}])";
  EXPECT_EQ(param_of(chat("{" + m + R"(, "stop": ["a", "b", "c"]})", limits)), "stop");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "stop": "toolong"})", limits)), "stop");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "logit_bias": {"1": 1, "2": 1}})", limits)), "logit_bias");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "n": 5})", limits)), "n");
}

TEST(OpenAiRequest, SpeculativeDecodingFieldsAreGufosOwn) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  const CompletionRequest unset = ok(chat("{" + messages + "}"));
  EXPECT_FALSE(unset.spec.has_value());
  EXPECT_FALSE(unset.draft_max.has_value());
  const CompletionRequest r = ok(chat("{" + messages + R"(, "spec": "ngram", "draft_max": 12, "draft_min": 3})"));
  EXPECT_EQ(r.spec, engine::SpecMode::Ngram);
  EXPECT_EQ(r.draft_max, 12);
  EXPECT_EQ(r.draft_min, 3);
  EXPECT_EQ(ok(chat("{" + messages + R"(, "spec": "none"})")).spec, engine::SpecMode::None);
  // No draft model in the server: a clear 400, not plain decoding in silence.
  const ParsedRequest by_model = chat("{" + messages + R"(, "spec": "draft"})");
  EXPECT_EQ(param_of(by_model), "spec");
  EXPECT_NE(std::get<ApiError>(by_model).message.find("draft model"), std::string::npos);
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "spec": "eagle"})")), "spec");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "spec": 1})")), "spec");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "draft_max": 0})")), "draft_max");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "draft_max": 65})")), "draft_max");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "draft_min": -1})")), "draft_min");
}

TEST(OpenAiRequest, CompletionsTakeAPromptAndIntegerLogprobs) {
  const auto parse = [](const std::string& json) {
    return parse_completion_request(ordered_json::parse(json), false, {.n_vocab = 10});
  };
  const CompletionRequest r = ok(parse(R"({"prompt": "The GNU", "logprobs": 3, "max_tokens": 5})"));
  EXPECT_EQ(r.prompt, "The GNU");
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.top_logprobs, 3);
  EXPECT_EQ(ok(parse(R"({"prompt": ["one"]})")).prompt, "one");
  EXPECT_EQ(param_of(parse(R"({"prompt": ["one", "two"]})")), "prompt");
  EXPECT_EQ(param_of(parse(R"({"prompt": 5})")), "prompt");
  EXPECT_EQ(param_of(parse(R"({})")), "prompt");
  EXPECT_EQ(param_of(parse(R"({"prompt": "x", "logprobs": 9})")), "logprobs");
  EXPECT_EQ(param_of(parse(R"({"prompt": "x", "echo": true})")), "echo");
}

TEST(OpenAiRequest, ErrorBodyHasOpenAisShape) {
  const ApiError e = bad_request("bad", "temperature", "invalid_type");
  const ordered_json body = e.body();
  EXPECT_EQ(body["error"]["message"], "bad");
  EXPECT_EQ(body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(body["error"]["param"], "temperature");
  EXPECT_EQ(body["error"]["code"], "invalid_type");
  EXPECT_TRUE(bad_request("x").body()["error"]["param"].is_null());
}

TEST(OpenAiRequest, ToolChoiceDecidesWhichToolsMayBeCalled) {
  const std::string base = R"("messages": [{"role": "user", "content": "hi"}], "tools": [)"
                           R"({"type": "function", "function": {"name": "get_time"}},)"
                           R"({"type": "function", "function": {"name": "get_weather"}}])";
  const CompletionRequest automatic = ok(chat("{" + base + "}"));
  EXPECT_EQ(automatic.tool_choice.mode, ToolChoice::Mode::Auto);
  EXPECT_EQ(automatic.callable_tools, (std::vector<std::string>{"get_time", "get_weather"}));

  const CompletionRequest none = ok(chat("{" + base + R"(, "tool_choice": "none"})"));
  EXPECT_EQ(none.tool_choice.mode, ToolChoice::Mode::None);
  EXPECT_FALSE(none.tools.has_value());  // the template is not told of them
  EXPECT_TRUE(none.callable_tools.empty());

  // The name alone, as clients often send it, or with OpenAI's "type".
  for (const char* choice :
       {R"({"function": {"name": "get_weather"}})", R"({"type": "function", "function": {"name": "get_weather"}})"}) {
    const CompletionRequest named = ok(chat("{" + base + R"(, "tool_choice": )" + choice + "}"));
    EXPECT_EQ(named.tool_choice.mode, ToolChoice::Mode::Named);
    EXPECT_EQ(named.callable_tools, (std::vector<std::string>{"get_weather"}));
    EXPECT_TRUE(named.tools.has_value());
  }
  EXPECT_EQ(ok(chat("{" + base + R"(, "tool_choice": "required"})")).tool_choice.mode, ToolChoice::Mode::Required);
}

TEST(OpenAiRequest, BadToolsAndToolChoicesNameTheField) {
  const std::string m = R"("messages": [{"role": "user", "content": "hi"}])";
  const std::string tools = R"(, "tools": [{"type": "function", "function": {"name": "get_time"}}])";
  EXPECT_EQ(param_of(chat("{" + m + R"(, "tools": {}})")), "tools");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "tools": [{"type": "function"}]})")), "tools[0]");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "tools": [{"type": "function", "function": {"name": 3}}]})")),
            "tools[0].function.name");
  EXPECT_EQ(param_of(chat("{" + m + tools + R"(, "tool_choice": "always"})")), "tool_choice");
  EXPECT_EQ(param_of(chat("{" + m + tools + R"(, "tool_choice": {"function": {}}})")), "tool_choice");
  EXPECT_EQ(param_of(chat("{" + m + tools + R"(, "tool_choice": {"function": {"name": "get_weather"}}})")),
            "tool_choice.function.name");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "tool_choice": "required"})")), "tool_choice");
  EXPECT_EQ(param_of(chat("{" + m + R"(, "tool_choice": "none"})")), "<accepted>");
  EXPECT_EQ(param_of(chat("{" + m + tools + R"(, "parallel_tool_calls": 1})")), "parallel_tool_calls");
}

TEST(OpenAiRequest, ToolSchemasAreCompiledAndTheirErrorsNameTheTool) {
  const std::string m = R"("messages": [{"role": "user", "content": "hi"}])";
  const std::string bad_schema = R"(, "tools": [{"type": "function", "function": {"name": "a"}},
    {"type": "function", "function": {"name": "b", "parameters": {"type": "object",
      "properties": {"x": {"type": "array", "uniqueItems": true}}}}}])";
  const ParsedRequest bad = chat("{" + m + bad_schema + "}");
  EXPECT_EQ(param_of(bad), "tools[1].function.parameters");
  EXPECT_EQ(std::get<ApiError>(bad).message,
            "'tools[1].function.parameters': #/properties/x: 'uniqueItems' is not supported");
  const std::string text =
      R"(, "tools": [{"type": "function", "function": {"name": "a", "parameters": {"type": "string"}}}])";
  EXPECT_EQ(param_of(chat("{" + m + text + "}")), "tools[0].function.parameters");
  // Not offered to the model: not compiled, not refused.
  EXPECT_EQ(param_of(chat("{" + m + bad_schema + R"(, "tool_choice": "none"})")), "<accepted>");
  std::string many = R"(, "tools": [)";
  for (int i = 0; i < 129; ++i)
    many += std::string(i ? "," : "") + R"({"type": "function", "function": {"name": "f"}})";
  EXPECT_EQ(param_of(chat("{" + m + many + "]}")), "tools");

  const CompletionRequest named = ok(chat("{" + m + R"(, "tools": [{"type": "function", "function": {"name": "a"}}],
    "tool_choice": {"function": {"name": "a"}}, "parallel_tool_calls": false})"));
  EXPECT_EQ(named.tool_parameters.size(), 1u);
  EXPECT_EQ(named.tool_parameters[0]["type"], "object");
  EXPECT_FALSE(named.parallel_tool_calls);
}

TEST(OpenAiRequest, AForcedToolCallAndAnotherConstraintCannotBothHold) {
  const std::string m =
      R"("messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {"name": "f"}}])";
  for (const char* choice : {R"("required")", R"({"function": {"name": "f"}})"}) {
    const std::string c = std::string(R"(, "tool_choice": )") + choice;
    EXPECT_EQ(param_of(chat("{" + m + c + R"(, "response_format": {"type": "json_object"}})")), "response_format");
    EXPECT_EQ(
        param_of(chat("{" + m + c + R"(, "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}})")),
        "response_format");
    EXPECT_EQ(param_of(chat("{" + m + c + R"(, "grammar": "root ::= \"a\""})")), "grammar");
    EXPECT_EQ(param_of(chat("{" + m + c + R"(, "json_schema": {"type": "object"}})")), "json_schema");
    EXPECT_EQ(param_of(chat("{" + m + c + R"(, "response_format": {"type": "text"}})")), "<accepted>");
  }
  // auto: the answer is the calls or follows the constraint (server/tool_grammar.h).
  EXPECT_EQ(param_of(chat("{" + m + R"(, "response_format": {"type": "json_object"}})")), "<accepted>");
}

}  // namespace
}  // namespace gufo::server

namespace gufo::server {
namespace {

std::string message_of(const ParsedRequest& r) {
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r).message : "<accepted>";
}

TEST(OpenAiRequest, JsonSchemaFromResponseFormatOrLlamaCppsField) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  const CompletionRequest openai = ok(chat("{" + messages + R"(, "response_format": {"type": "json_schema",
    "json_schema": {"name": "person", "strict": true, "schema": {"type": "object",
      "properties": {"name": {"type": "string"}}, "required": ["name"], "additionalProperties": false}}}})"));
  ASSERT_TRUE(openai.grammar.has_value());
  EXPECT_EQ(openai.grammar_syntax, GrammarSyntax::JsonSchema);
  EXPECT_EQ(openai.grammar_param, "response_format.json_schema.schema");
  EXPECT_EQ(
      *openai.grammar,
      R"({"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false})");
  const CompletionRequest llama = ok(chat("{" + messages + R"(, "json_schema": {"type": "integer"}})"));
  EXPECT_EQ(llama.grammar_syntax, GrammarSyntax::JsonSchema);
  EXPECT_EQ(llama.grammar_param, "json_schema");
  const CompletionRequest beside = ok(chat("{" + messages + R"(, "response_format": {"type": "json_object",
    "schema": {"type": "array"}}})"));
  EXPECT_EQ(beside.grammar_param, "response_format.schema");
  const CompletionRequest no_schema = ok(chat("{" + messages + R"(, "response_format": {"type": "json_schema",
    "json_schema": {"name": "any"}}})"));
  EXPECT_EQ(no_schema.grammar, "true");
}

TEST(OpenAiRequest, ABadJsonSchemaIsA400WithItsPath) {
  const std::string messages = R"("messages": [{"role": "user", "content": "hi"}])";
  const auto bad = chat("{" + messages + R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "x",
    "schema": {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}}}}})");
  EXPECT_EQ(param_of(bad), "response_format.json_schema.schema");
  EXPECT_EQ(message_of(bad), "'response_format.json_schema.schema': #/properties/tags: 'uniqueItems' is not supported");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "json_schema": {"$ref": "#/$defs/none"}})")), "json_schema");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "json_schema": 3})")), "json_schema");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "response_format": {"type": "json_schema"}})")),
            "response_format.json_schema");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "response_format": {"type": "json_schema",
    "json_schema": {"name": 1, "schema": {}}}})")),
            "response_format.json_schema.name");
  EXPECT_EQ(param_of(chat("{" + messages + R"(, "grammar": "root ::= \"a\"", "json_schema": {}})")), "json_schema");
}

}  // namespace
}  // namespace gufo::server
