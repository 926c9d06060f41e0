// Tool calls streamed as deltas: each call announced once (id and name) with its arguments'
// first byte, the arguments in pieces without the blanks outside strings, the same whatever
// the pieces the text arrives in; Llama 3's syntax and tag; text off the calls' shape
// announces nothing. And AnswerSplitter with stream_calls: the deltas of a grammar-forced
// answer assemble to the calls of the whole answer (whole calls: calls_complete), stop where
// the calls grammar refuses a byte, and never come under a response_format of the request's
// own or for a tool not offered.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "server/generation.h"
#include "server/openai_request.h"
#include "server/tool_call_stream.h"
#include "server/tool_grammar.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"New York\", \"days\": [1, 2],\n"
    "  \"note\": \"a \\\"quoted\\\" } and {\"}}\n</tool_call>";
const std::string kWeatherArguments = R"({"city":"New York","days":[1,2],"note":"a \"quoted\" } and {"})";
const std::string kNow = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";

// The calls that `deltas` assemble to, as OpenAI's client assembles them; each call's first
// delta must carry its id and name, and no later one.
std::vector<ToolCall> assemble(const std::vector<ToolCallDelta>& deltas) {
  std::vector<ToolCall> calls;
  for (const ToolCallDelta& d : deltas) {
    if (d.index == static_cast<int>(calls.size())) {
      EXPECT_FALSE(d.id.empty());
      EXPECT_FALSE(d.name.empty());
      calls.push_back({d.id, d.name, ""});
    } else {
      EXPECT_LT(d.index, static_cast<int>(calls.size()));
      EXPECT_TRUE(d.id.empty() && d.name.empty()) << "call " << d.index << " announced twice";
    }
    if (d.index < static_cast<int>(calls.size())) calls[static_cast<size_t>(d.index)].arguments += d.arguments;
  }
  return calls;
}

std::vector<ToolCallDelta> feed_in_pieces(ToolCallStream& stream, const std::string& text, size_t piece) {
  std::vector<ToolCallDelta> all;
  for (size_t at = 0; at < text.size(); at += piece) {
    for (ToolCallDelta& d : stream.feed(std::string_view(text).substr(at, piece))) all.push_back(std::move(d));
  }
  return all;
}

TEST(ToolCallStream, HermesCallsAssembleWhateverThePieces) {
  const std::string text = "\n\n" + kWeather + "\n" + kNow;
  for (size_t piece : {size_t{1}, size_t{2}, size_t{5}, size_t{17}, text.size()}) {
    ToolCallStream stream(ToolSyntax::Hermes);
    const std::vector<ToolCall> calls = assemble(feed_in_pieces(stream, text, piece));
    ASSERT_EQ(calls.size(), 2u) << "pieces of " << piece;
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, kWeatherArguments);
    EXPECT_EQ(calls[1].name, "now");
    EXPECT_EQ(calls[1].arguments, "{}");
    EXPECT_NE(calls[0].id, calls[1].id);
    EXPECT_FALSE(stream.broken());
    EXPECT_TRUE(stream.between_calls());
  }
}

TEST(ToolCallStream, ACallIsAnnouncedWithItsArgumentsFirstByteAndTheyFollowAsWritten) {
  ToolCallStream stream(ToolSyntax::Hermes);
  EXPECT_TRUE(stream.feed("<tool_call>\n{\"name\": \"get_wea").empty());
  EXPECT_TRUE(stream.feed("ther\", \"arguments\": ").empty());
  std::vector<ToolCallDelta> d = stream.feed("{\"city\": \"Pa");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "get_weather");
  EXPECT_FALSE(d[0].id.empty());
  EXPECT_EQ(d[0].arguments, "{\"city\":\"Pa");
  d = stream.feed("ris\"}}\n</tool");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].arguments, "ris\"}");
  EXPECT_FALSE(stream.between_calls());  // the call's closing is not whole yet
  EXPECT_TRUE(stream.feed("_call>").empty());
  EXPECT_TRUE(stream.between_calls());
  EXPECT_EQ(stream.calls(), 1);
}

TEST(ToolCallStream, Llama3CallsMayFollowAPythonTag) {
  const std::string call = R"({"name": "get_weather", "parameters": {"city": "Paris"}})";
  for (const std::string& prefix : {std::string(""), std::string("<|python_tag|>"), std::string(" <|python_tag|>\n")}) {
    ToolCallStream stream(ToolSyntax::Llama3);
    const std::vector<ToolCall> calls = assemble(feed_in_pieces(stream, prefix + call, 3));
    ASSERT_EQ(calls.size(), 1u) << prefix;
    EXPECT_EQ(calls[0].name, "get_weather");
    EXPECT_EQ(calls[0].arguments, R"({"city":"Paris"})");
  }
}

TEST(ToolCallStream, TextOffTheShapeAnnouncesNothing) {
  for (const std::string& text :
       {std::string("<tool_call>\n{\"arguments\": {}, \"name\": \"now\"}\n</tool_call>"),
        std::string("<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>"),
        std::string("<tool_call>\n{\"name\": \"now\", \"arguments\": \"{}\"}\n</tool_call>"),
        std::string("Sure: <tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>")}) {
    ToolCallStream stream(ToolSyntax::Hermes);
    EXPECT_TRUE(stream.feed(text).empty()) << text;
    EXPECT_TRUE(stream.broken()) << text;
    EXPECT_FALSE(calls_as_streamed(text, ToolSyntax::Hermes).has_value()) << text;
  }
  // Arguments that are no object: the call is never announced.
  ToolCallStream number(ToolSyntax::Hermes);
  EXPECT_TRUE(number.feed("<tool_call>\n{\"name\": \"now\", \"arguments\": 1}").empty());
  EXPECT_EQ(number.calls(), 0);
  // After the shape breaks, nothing more comes, even a good call.
  ToolCallStream stream(ToolSyntax::Hermes);
  EXPECT_TRUE(stream.feed("<tool_call>\n[").empty());
  EXPECT_TRUE(stream.feed(kNow).empty());
}

TEST(ToolCallStream, WholeTextIsCallsOnlyWhenEveryCallCloses) {
  const std::optional<std::vector<ToolCall>> calls = calls_as_streamed(kWeather + "\n" + kNow, ToolSyntax::Hermes);
  ASSERT_TRUE(calls.has_value());
  ASSERT_EQ(calls->size(), 2u);
  EXPECT_EQ((*calls)[0].arguments, kWeatherArguments);
  EXPECT_FALSE(calls_as_streamed(kWeather.substr(0, kWeather.size() - 3), ToolSyntax::Hermes).has_value());
  EXPECT_FALSE(calls_as_streamed("", ToolSyntax::Hermes).has_value());
}

CompletionRequest request(const std::string& extra) {
  const std::string body = R"({"messages": [{"role": "user", "content": "hi"}], "tools": [
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "array", "items": {"type": "integer"}},
      "note": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "now"}}])" +
                           extra + "}";
  ParsedRequest parsed = parse_completion_request(ordered_json::parse(body), true, {.n_vocab = 1000});
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    ADD_FAILURE() << error->message;
    return {};
  }
  return std::get<CompletionRequest>(parsed);
}

GenerationPlan plan_for(const std::string& extra) {
  GenerationPlan plan;
  plan.request = request(extra);
  Result<std::optional<ToolConstraint>> c = tool_constraint(plan.request);
  EXPECT_TRUE(c.ok() && c->has_value());
  if (c.ok() && c->has_value()) plan.tool_calls_grammar = (*c)->calls;
  return plan;
}

// An answer fed to a streaming splitter in pieces: its content, and the calls its deltas assemble to.
struct Streamed {
  std::string content;
  std::vector<ToolCall> calls;
  AnswerParts rest;
  bool streamed_calls = false;
  bool complete = false;  // calls_complete()
};
Streamed stream_answer(const GenerationPlan& plan, const std::string& text, size_t piece) {
  AnswerSplitter splitter(plan, /*stream_calls=*/true);
  Streamed out;
  std::vector<ToolCallDelta> deltas;
  for (size_t at = 0; at < text.size(); at += piece) {
    AnswerParts parts = splitter.feed(text.substr(at, piece));
    out.content += parts.content;
    deltas.insert(deltas.end(), parts.call_deltas.begin(), parts.call_deltas.end());
  }
  out.rest = splitter.finish();
  out.content += out.rest.content;
  deltas.insert(deltas.end(), out.rest.call_deltas.begin(), out.rest.call_deltas.end());
  out.calls = assemble(deltas);
  out.streamed_calls = splitter.streamed_calls();
  out.complete = splitter.calls_complete();
  return out;
}

TEST(ToolCallStream, StreamedCallsAreTheWholeAnswersCalls) {
  for (const std::string& extra : {std::string(""), std::string(R"(, "tool_choice": "required")")}) {
    const GenerationPlan plan = plan_for(extra);
    const std::string prefix = extra.empty() ? "Let me look.\n" : "";
    const std::string text = prefix + kWeather + "\n" + kNow;
    const AnswerParts whole = whole_answer(plan, text);
    ASSERT_EQ(whole.tool_calls.size(), 2u) << extra;
    EXPECT_EQ(whole.tool_calls[0].arguments, kWeatherArguments);
    for (size_t piece : {size_t{1}, size_t{4}, size_t{64}}) {
      const Streamed s = stream_answer(plan, text, piece);
      EXPECT_EQ(s.content, whole.content) << extra << " pieces of " << piece;
      ASSERT_EQ(s.calls.size(), whole.tool_calls.size()) << extra << " pieces of " << piece;
      for (size_t i = 0; i < s.calls.size(); ++i) {
        EXPECT_EQ(s.calls[i].name, whole.tool_calls[i].name);
        EXPECT_EQ(s.calls[i].arguments, whole.tool_calls[i].arguments);
      }
      EXPECT_TRUE(s.rest.tool_calls.empty());  // nothing twice
      EXPECT_TRUE(s.streamed_calls);
      EXPECT_TRUE(s.complete);
    }
  }
}

TEST(ToolCallStream, Llama3CallsStreamAsTheWholeAnswerHasThem) {
  GenerationPlan plan;
  plan.request = request("");
  plan.request.tool_syntax = ToolSyntax::Llama3;
  Result<std::optional<ToolConstraint>> c = tool_constraint(plan.request);
  ASSERT_TRUE(c.ok() && c->has_value());
  plan.tool_calls_grammar = (*c)->calls;
  const std::string text =
      "Let me check. <|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";
  const AnswerParts whole = whole_answer(plan, text);
  ASSERT_EQ(whole.tool_calls.size(), 1u);
  const Streamed s = stream_answer(plan, text, 1);
  EXPECT_EQ(s.content, whole.content);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, whole.tool_calls[0].arguments);
  EXPECT_TRUE(s.complete);
}

TEST(ToolCallStream, OnlyWhatTheCallsGrammarAcceptsStreams) {
  // "days" holds integers: the grammar refuses the "x", so the call streams up to it, is not
  // whole, and the refused rest is content.
  const GenerationPlan plan = plan_for(R"(, "tool_choice": "required")");
  const std::string text = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"days\": [\"x\"]}}\n</tool_call>";
  const Streamed s = stream_answer(plan, text, 3);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].arguments, R"({"days":[)");
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.content, "\"x\"]}}\n</tool_call>");
}

TEST(ToolCallStream, ACallCutShortStaysAsFarAsItGot) {
  const GenerationPlan plan = plan_for(R"(, "tool_choice": "required")");
  const std::string cut = kWeather.substr(0, 73);  // to `"da` of "days"
  const Streamed s = stream_answer(plan, cut, 7);
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, R"({"city":"New York","da)");
  EXPECT_TRUE(s.content.empty());
  EXPECT_FALSE(s.complete);  // finish_reason stays what cut it (length, or stop for a stop string)
  // Cut before its name is whole: nothing was announced, and the text is content as before.
  const Streamed early = stream_answer(plan, kWeather.substr(0, 20), 7);
  EXPECT_TRUE(early.calls.empty());
  EXPECT_FALSE(early.streamed_calls);
  EXPECT_EQ(early.content, kWeather.substr(0, 20));
}

TEST(ToolCallStream, NoDeltasUnderTheRequestsOwnConstraintOrForToolsNotOffered) {
  // auto beside a response_format: the text may be the answer, so the calls come whole at the end.
  const GenerationPlan or_answer = plan_for(R"(, "response_format": {"type": "json_object"})");
  const Streamed s = stream_answer(or_answer, kNow, 3);
  EXPECT_FALSE(s.streamed_calls);
  EXPECT_TRUE(s.calls.empty());
  ASSERT_EQ(s.rest.tool_calls.size(), 1u);
  EXPECT_EQ(s.rest.tool_calls[0].name, "now");
  // A name the request did not offer (possible only if the grammar were not applied).
  const GenerationPlan plan = plan_for("");
  const Streamed invented =
      stream_answer(plan, "<tool_call>\n{\"name\": \"rm_rf\", \"arguments\": {}}\n</tool_call>", 5);
  EXPECT_TRUE(invented.calls.empty());
  EXPECT_FALSE(invented.streamed_calls);
  EXPECT_TRUE(invented.rest.tool_calls.empty());
}

}  // namespace
}  // namespace gufo::server
