// The tool grammar through the byte matcher: calls in the template's exact syntax, to offered
// tools only (the named one only), with arguments that follow each tool's schema; one call
// or several as parallel_tool_calls says; auto: free text, then nothing but valid calls from
// "<tool_call>" on; with a response_format beside auto: the calls, or an answer under it.
// Also the parameters schema narrowed to objects, what counts as calls afterwards, and the
// same in Llama 3's syntax ({"name": ..., "parameters": ...}, one call).
#include <gtest/gtest.h>

#include <string>

#include "grammar/matcher.h"
#include "server/generation.h"
#include "server/grammar_cache.h"
#include "server/openai_request.h"
#include "server/tool_grammar.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

const char* kTools = R"("tools": [
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "now"}}])";

CompletionRequest request(const std::string& extra) {
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"}], )" + std::string(kTools) + extra + "}";
  ParsedRequest parsed = parse_completion_request(ordered_json::parse(body), true, {.n_vocab = 1000});
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << error->message;
    return {};
  }
  return std::get<CompletionRequest>(parsed);
}

ToolConstraint constraint_of(const CompletionRequest& r) {
  Result<std::optional<ToolConstraint>> c = tool_constraint(r);
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
  EXPECT_TRUE(c.ok() && c->has_value());
  return c.ok() && c->has_value() ? **c : ToolConstraint{};
}

bool matches(const std::shared_ptr<const grammar::Grammar>& g, std::string_view text) {
  if (!g) return false;
  grammar::Matcher m(g);
  return m.accept(text) && m.can_end();
}

const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
const std::string kNow = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";

TEST(ToolGrammar, RequiredAllowsOnlyValidCallsToOfferedTools) {
  const ToolConstraint c = constraint_of(request(R"(, "tool_choice": "required")"));
  EXPECT_EQ(c.answer, c.calls);
  for (const std::string& good :
       {kWeather, kNow, "\n\n" + kNow, kWeather + "\n" + kNow,
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"unit\": "
                    "\"celsius\"}}\n</tool_call>"),
        std::string(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\n  \"city\":\"Oslo\"\n}}\n</tool_call>")}) {
    EXPECT_TRUE(matches(c.answer, good)) << good;
  }
  for (const std::string& bad :
       {std::string(""), std::string("Sure: ") + kNow,  // no text around the calls
        std::string("<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n</tool_call>"),   // not offered
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"),  // city required
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": 3}}\n</tool_call>"),
        std::string(
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"x\": 1}}\n</tool_call>"),
        std::string("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                    "\"Llanfairpwllgwyngyll\"}}\n</tool_call>"),
        std::string("<tool_call>\n{\"name\": \"now\", \"arguments\": {\"x\": 1}}\n</tool_call>"),  // no parameters: {}
        std::string("<tool_call>\n{\"arguments\": {}, \"name\": \"now\"}\n</tool_call>"),  // the template's order
        kNow + " done", kWeather + kNow}) {
    EXPECT_FALSE(matches(c.answer, bad)) << bad;
  }
}

TEST(ToolGrammar, NamedAndSingleCall) {
  const ToolConstraint named =
      constraint_of(request(R"(, "tool_choice": {"type": "function", "function": {"name": "now"}})"));
  EXPECT_TRUE(matches(named.answer, kNow));
  EXPECT_TRUE(matches(named.answer, kNow + "\n" + kNow));
  EXPECT_FALSE(matches(named.answer, kWeather));
  const ToolConstraint single = constraint_of(request(R"(, "tool_choice": "required", "parallel_tool_calls": false)"));
  EXPECT_TRUE(matches(single.answer, kWeather));
  EXPECT_FALSE(matches(single.answer, kWeather + "\n" + kNow));
}

TEST(ToolGrammar, AutoIsFreeUntilACallOpens) {
  const ToolConstraint c = constraint_of(request(""));
  EXPECT_NE(c.answer, c.calls);
  for (const std::string& good : {std::string(""), std::string("It is sunny <b>today</b>."),
                                  "Let me check.\n" + kWeather, kWeather + "\n" + kNow, std::string("a <tool_cal")}) {
    EXPECT_TRUE(matches(c.answer, good)) << good;
  }
  for (const std::string& bad : {std::string("x <tool_call>\n{\"name\": \"nope\""), "x " + kWeather + " and text",
                                 std::string("<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>")}) {
    EXPECT_FALSE(matches(c.answer, bad)) << bad;
  }
  grammar::Matcher m(c.answer);
  ASSERT_TRUE(m.accept("I will call it. <tool_call>"));
  EXPECT_FALSE(m.accept("hello"));
  EXPECT_TRUE(m.accept("\n{\"name\": \""));
}

TEST(ToolGrammar, AutoBesideAResponseFormatIsTheCallsOrTheAnswer) {
  const ToolConstraint c = constraint_of(request(
      R"(, "response_format": {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object",
        "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], "additionalProperties": false}}})"));
  EXPECT_TRUE(matches(c.answer, "{\"ok\": true}"));
  EXPECT_TRUE(matches(c.answer, kWeather));
  EXPECT_FALSE(matches(c.answer, "Let me check.\n" + kWeather));
  EXPECT_FALSE(matches(c.answer, "{\"ok\": 1}"));
  EXPECT_FALSE(matches(c.answer, "{\"ok\": true}" + kNow));
}

TEST(ToolGrammar, CompiledOnceAndCachedByToolChoiceParallelAndTools) {
  const CompletionRequest r = request(R"(, "tool_choice": "required")");
  const ToolConstraint a = constraint_of(r);
  const ToolConstraint b = constraint_of(request(R"(, "tool_choice": "required", "seed": 3)"));
  EXPECT_EQ(a.answer.get(), b.answer.get());
  const ToolConstraint single = constraint_of(request(R"(, "tool_choice": "required", "parallel_tool_calls": false)"));
  EXPECT_NE(a.answer.get(), single.answer.get());
  EXPECT_EQ(tool_grammar_key(ToolCallForm::Calls, r), tool_grammar_key(ToolCallForm::Calls, r));
  EXPECT_NE(tool_grammar_key(ToolCallForm::Calls, r), tool_grammar_key(ToolCallForm::AfterText, r));
}

TEST(ToolGrammar, NoConstraintWithoutCallableTools) {
  const Result<std::optional<ToolConstraint>> none = tool_constraint(request(R"(, "tool_choice": "none")"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(ToolGrammar, ParametersAreNarrowedToObjects) {
  EXPECT_EQ(*tool_parameters_schema(nullptr),
            ordered_json::parse(R"({"type": "object", "properties": {}, "additionalProperties": false})"));
  const ordered_json untyped = ordered_json::parse(R"({"properties": {"a": {"type": "integer"}}})");
  EXPECT_EQ((*tool_parameters_schema(&untyped))["type"], "object");
  const ordered_json either = ordered_json::parse(R"({"type": ["object", "null"]})");
  EXPECT_EQ((*tool_parameters_schema(&either))["type"], "object");
  const ordered_json text = ordered_json::parse(R"({"type": "string"})");
  ASSERT_FALSE(tool_parameters_schema(&text).ok());
  EXPECT_EQ(tool_parameters_schema(&text).error().message,
            "#/type: a tool's arguments are a JSON object, not \"string\"");
  const ordered_json number = 3;
  EXPECT_FALSE(tool_parameters_schema(&number).ok());
}

TEST(ToolGrammar, OnlyAWholeMatchCountsAsCalls) {
  const ToolConstraint c = constraint_of(request(R"(, "tool_choice": "required")"));
  EXPECT_TRUE(is_tool_calls(c.calls, "\n" + kWeather + "\n" + kNow + "\n"));
  EXPECT_FALSE(is_tool_calls(c.calls, kWeather.substr(0, 30)));  // cut short by max_tokens
  EXPECT_FALSE(is_tool_calls(c.calls, "<tool_call>\n{\"name\": \"now\", \"arguments\": {\"x\": 1}}\n</tool_call>"));
  EXPECT_FALSE(is_tool_calls(c.calls, "  "));
}

CompletionRequest llama3_request(const std::string& extra) {
  CompletionRequest r = request(extra);
  r.tool_syntax = ToolSyntax::Llama3;
  return r;
}

const std::string kLlama3Weather = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
const std::string kLlama3Now = "{\"name\": \"now\", \"parameters\": {}}";

TEST(ToolGrammar, Llama3RequiredIsOneCallInItsTemplatesSyntax) {
  const ToolConstraint c = constraint_of(llama3_request(R"(, "tool_choice": "required")"));
  for (const std::string& good :
       {kLlama3Weather, kLlama3Now, "\n\n" + kLlama3Now,
        std::string("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\", \"unit\": \"celsius\"}}")}) {
    EXPECT_TRUE(matches(c.answer, good)) << good;
    EXPECT_TRUE(is_tool_calls(c.calls, good)) << good;
  }
  for (const std::string& bad :
       {kWeather, kLlama3Weather + "\n" + kLlama3Now, std::string("{\"name\": \"nope\", \"parameters\": {}}"),
        std::string("{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}"),
        std::string("{\"name\": \"get_weather\", \"parameters\": {\"town\": \"Paris\"}}"), std::string("Sure.")}) {
    EXPECT_FALSE(matches(c.answer, bad)) << bad;
  }
  // Not the Hermes grammar: the syntax is part of the cache key.
  const ToolConstraint hermes = constraint_of(request(R"(, "tool_choice": "required")"));
  EXPECT_NE(c.answer.get(), hermes.answer.get());
}

TEST(ToolGrammar, Llama3AutoIsFreeUntilACallOpens) {
  const ToolConstraint c = constraint_of(llama3_request(""));
  for (const std::string& good :
       {std::string("It is sunny."), kLlama3Weather, "Let me check. " + kLlama3Now, std::string("a {\"na")}) {
    EXPECT_TRUE(matches(c.answer, good)) << good;
  }
  for (const std::string& bad : {std::string("{\"name\": \"nope\""), kLlama3Now + " and text"}) {
    EXPECT_FALSE(matches(c.answer, bad)) << bad;
  }
}

// What the server returns for a streamed Llama 3 answer under the auto constraint: text before
// the call is content, a <|python_tag|> before it belongs to the call, and the call comes back
// as a tool call (the same whole or fed in pieces).
TEST(ToolGrammar, Llama3AnswersSplitIntoContentAndACall) {
  GenerationPlan plan;
  plan.request = llama3_request("");
  plan.tool_calls_grammar = constraint_of(plan.request).calls;
  for (const std::string& prefix : {std::string(""), std::string("<|python_tag|>"), std::string("Let me check.\n"),
                                    std::string("Let me check. <|python_tag|>")}) {
    const AnswerParts whole = whole_answer(plan, prefix + kLlama3Weather);
    ASSERT_EQ(whole.tool_calls.size(), 1u) << prefix;
    EXPECT_EQ(whole.tool_calls[0].name, "get_weather");
    EXPECT_EQ(whole.tool_calls[0].arguments, "{\"city\":\"Paris\"}");
    EXPECT_EQ(whole.content, prefix.rfind("Let", 0) == 0 ? "Let me check." : "") << prefix;
    AnswerSplitter stream(plan);
    std::string content;
    const std::string text = prefix + kLlama3Weather;
    for (size_t at = 0; at < text.size(); at += 3) content += stream.feed(text.substr(at, 3)).content;
    const AnswerParts rest = stream.finish();
    content += rest.content;
    EXPECT_EQ(content, whole.content) << prefix;
    ASSERT_EQ(rest.tool_calls.size(), 1u) << prefix;
  }
  // A call cut short (max_tokens) is text, tag and all.
  const AnswerParts cut = whole_answer(plan, "<|python_tag|>" + kLlama3Weather.substr(0, 20));
  EXPECT_TRUE(cut.tool_calls.empty());
  EXPECT_EQ(cut.content, "<|python_tag|>" + kLlama3Weather.substr(0, 20));
}

}  // namespace
}  // namespace gufo::server
