// The Responses API pieces: the conversation store (LRU by count and by bytes), the request
// conversion (input items, instructions, a previous conversation, flat tools) and the event
// stream (sequence numbers, item order, the final response).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/response_store.h"
#include "server/responses_request.h"
#include "server/responses_response.h"

namespace gufo::server {
namespace {

using nlohmann::ordered_json;

TEST(ResponseStore, KeepsTheMostRecentlyUsedWithinItsBounds) {
  ResponseStore store(/*max_responses=*/2, /*max_bytes=*/1 << 20);
  store.put("a", ordered_json::array({1}));
  store.put("b", ordered_json::array({2}));
  ASSERT_TRUE(store.get("a").has_value());  // a is now the most recent
  store.put("c", ordered_json::array({3}));
  EXPECT_FALSE(store.get("b").has_value());
  EXPECT_EQ(store.get("a"), ordered_json::array({1}));
  EXPECT_EQ(store.size(), 2u);

  ResponseStore small(/*max_responses=*/100, /*max_bytes=*/16);
  small.put("x", ordered_json::array({"0123456789"}));
  small.put("y", ordered_json::array({"0123456789"}));  // 16 bytes: x must go
  EXPECT_FALSE(small.get("x").has_value());
  EXPECT_TRUE(small.get("y").has_value());  // the newest stays even alone over the bound
}

TEST(ResponsesRequest, ItemsInstructionsAndThePreviousConversationBecomeChatMessages) {
  const ordered_json previous = ordered_json::parse(R"([{"role": "user", "content": "hi"},
                                                        {"role": "assistant", "content": "hello"}])");
  const ordered_json body = ordered_json::parse(R"({
    "model": "m", "instructions": "Be brief.", "max_output_tokens": 20, "temperature": 0.5,
    "input": [
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather?"}]},
      {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{}"},
      {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
      {"type": "reasoning", "summary": []}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}},
              {"type": "function", "name": "get_time"}],
    "tool_choice": {"type": "function", "name": "get_time"}})");
  auto parsed = parse_responses_request(body, &previous, RequestLimits{.n_vocab = 100});
  ASSERT_TRUE(std::holds_alternative<ResponsesRequest>(parsed)) << std::get<ApiError>(parsed).message;
  const ResponsesRequest& r = std::get<ResponsesRequest>(parsed);
  EXPECT_EQ(r.request.messages[0], ordered_json::parse(R"({"role": "system", "content": "Be brief."})"));
  EXPECT_EQ(r.request.messages[2]["content"], "hello");
  EXPECT_EQ(r.request.messages[3], ordered_json::parse(R"({"role": "user", "content": "weather?"})"));
  EXPECT_EQ(r.request.messages[4]["tool_calls"].size(), 2u);  // consecutive calls: one assistant turn
  EXPECT_EQ(r.request.messages[5],
            ordered_json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "sunny"})"));
  EXPECT_EQ(r.request.messages.size(), 6u);
  EXPECT_EQ(r.input_messages.size(), 3u);  // what this request adds to the stored conversation
  EXPECT_EQ((*r.request.tools)[0]["function"]["name"], "get_weather");
  EXPECT_EQ(r.request.callable_tools, (std::vector<std::string>{"get_time"}));
  EXPECT_EQ(r.request.max_tokens, 20);
  EXPECT_TRUE(r.store);
}

TEST(ResponsesStream, SequenceNumbersItemsAndTheFinalResponse) {
  ResponsesEventStream stream(
      {.id = "resp_1", .model = "m", .created_at = 1, .previous_response_id = "", .instructions = nullptr});
  std::string sse = stream.start();
  sse += stream.feed({.reasoning = "hmm", .content = "", .tool_calls = {}, .call_deltas = {}});
  sse += stream.feed({.reasoning = "", .content = "Hi", .tool_calls = {}, .call_deltas = {}});
  sse += stream.finish({.reasoning = "", .content = "!", .tool_calls = {{"call_1", "f", "{}"}}, .call_deltas = {}},
                       false, {.input_tokens = 3, .cached_tokens = 0, .output_tokens = 4});
  std::vector<ordered_json> events;
  for (size_t at = 0; (at = sse.find("data: ", at)) != std::string::npos;) {
    const size_t end = sse.find('\n', at);
    events.push_back(ordered_json::parse(sse.substr(at + 6, end - at - 6)));
    at = end;
  }
  std::vector<std::string> types;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], i);
    types.push_back(events[i]["type"]);
  }
  EXPECT_EQ(types, (std::vector<std::string>{"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"}));
  const ordered_json& final_response = events.back()["response"];
  EXPECT_EQ(final_response["status"], "completed");
  ASSERT_EQ(final_response["output"].size(), 3u);
  EXPECT_EQ(final_response["output"][1]["content"][0]["text"], "Hi!");
  EXPECT_EQ(final_response["output"][2]["call_id"], "call_1");
  EXPECT_EQ(final_response["usage"]["total_tokens"], 7);
}

// Parsed SSE events of a stream's text.
std::vector<ordered_json> events_of(const std::string& sse) {
  std::vector<ordered_json> events;
  for (size_t at = 0; (at = sse.find("data: ", at)) != std::string::npos;) {
    const size_t end = sse.find('\n', at);
    events.push_back(ordered_json::parse(sse.substr(at + 6, end - at - 6)));
    at = end;
  }
  return events;
}

// Streamed calls (AnswerSplitter's call deltas): a function_call item opens with a call's first
// delta, its arguments come as deltas, and it closes whole when the next call or the end comes.
TEST(ResponsesStream, StreamedCallsAreItemsWhoseArgumentsComeInDeltas) {
  ResponsesEventStream stream(
      {.id = "resp_2", .model = "m", .created_at = 1, .previous_response_id = "", .instructions = nullptr});
  std::string sse = stream.start();
  sse += stream.feed({.reasoning = "",
                      .content = "",
                      .tool_calls = {},
                      .call_deltas = {{.index = 0, .id = "call_a", .name = "get_weather", .arguments = "{\"city\":"}}});
  sse += stream.feed({.reasoning = "",
                      .content = "",
                      .tool_calls = {},
                      .call_deltas = {{.index = 0, .id = "", .name = "", .arguments = "\"Oslo\"}"},
                                      {.index = 1, .id = "call_b", .name = "now", .arguments = "{}"}}});
  sse += stream.finish({.reasoning = "", .content = "", .tool_calls = {}, .call_deltas = {}}, false,
                       {.input_tokens = 3, .cached_tokens = 0, .output_tokens = 9});
  std::vector<std::string> types;
  std::string first_arguments;
  for (const ordered_json& e : events_of(sse)) {
    types.push_back(e["type"]);
    if (e["type"] == "response.function_call_arguments.delta" && e["output_index"] == 0) first_arguments += e["delta"];
  }
  EXPECT_EQ(types, (std::vector<std::string>{
                       "response.created", "response.in_progress", "response.output_item.added",
                       "response.function_call_arguments.delta", "response.function_call_arguments.delta",
                       "response.function_call_arguments.done", "response.output_item.done",
                       "response.output_item.added", "response.function_call_arguments.delta",
                       "response.function_call_arguments.done", "response.output_item.done", "response.completed"}));
  EXPECT_EQ(first_arguments, R"({"city":"Oslo"})");
  const ordered_json output = events_of(sse).back()["response"]["output"];
  ASSERT_EQ(output.size(), 2u);  // the calls only: no empty message beside them
  EXPECT_EQ(output[0]["call_id"], "call_a");
  EXPECT_EQ(output[0]["arguments"], R"({"city":"Oslo"})");
  EXPECT_EQ(output[1]["name"], "now");
  EXPECT_EQ(output[1]["status"], "completed");

  // A call cut short (max_output_tokens): its item closes incomplete, named, as far as it got.
  ResponsesEventStream cut(
      {.id = "resp_3", .model = "m", .created_at = 1, .previous_response_id = "", .instructions = nullptr});
  std::string cut_sse = cut.start();
  cut_sse += cut.feed({.reasoning = "",
                       .content = "",
                       .tool_calls = {},
                       .call_deltas = {{.index = 0, .id = "call_c", .name = "get_weather", .arguments = "{\"ci"}}});
  cut_sse += cut.finish({.reasoning = "", .content = "", .tool_calls = {}, .call_deltas = {}}, true,
                        {.input_tokens = 3, .cached_tokens = 0, .output_tokens = 2}, /*calls_whole=*/false);
  const std::vector<ordered_json> cut_events = events_of(cut_sse);
  bool named_done = false;
  for (const ordered_json& e : cut_events) {
    if (e["type"] == "response.function_call_arguments.done") named_done = e["name"] == "get_weather";
  }
  EXPECT_TRUE(named_done);
  EXPECT_EQ(cut_events.back()["type"], "response.incomplete");
  EXPECT_EQ(cut_events.back()["response"]["output"][0]["status"], "incomplete");
  EXPECT_EQ(cut_events.back()["response"]["output"][0]["arguments"], "{\"ci");
}

}  // namespace
}  // namespace gufo::server

namespace gufo::server {
namespace {

TEST(ResponsesRequest, TextFormatJsonSchemaIsFlatAndErrorsNameIt) {
  const ordered_json good = ordered_json::parse(R"({"input": "hi", "text": {"format": {"type": "json_schema",
    "name": "n", "strict": true, "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}})");
  auto parsed = parse_responses_request(good, nullptr, RequestLimits{.n_vocab = 100});
  ASSERT_TRUE(std::holds_alternative<ResponsesRequest>(parsed)) << std::get<ApiError>(parsed).message;
  EXPECT_EQ(std::get<ResponsesRequest>(parsed).request.grammar_syntax, GrammarSyntax::JsonSchema);
  const ordered_json bad = ordered_json::parse(R"({"input": "hi", "text": {"format": {"type": "json_schema",
    "name": "n", "schema": {"type": "object", "properties": {"a": {"not": {}}}}}}})");
  auto refused = parse_responses_request(bad, nullptr, RequestLimits{.n_vocab = 100});
  ASSERT_TRUE(std::holds_alternative<ApiError>(refused));
  EXPECT_EQ(std::get<ApiError>(refused).param, "text.format.schema");
  EXPECT_EQ(std::get<ApiError>(refused).message, "'text.format.schema': #/properties/a: 'not' is not supported");
}

}  // namespace
}  // namespace gufo::server
