// OpenAI response bodies (see openai_response.h).
#include "server/openai_response.h"

#include "server/random_id.h"

namespace gufo::server {

using nlohmann::ordered_json;

std::string new_response_id(bool chat) { return random_id(chat ? "chatcmpl-" : "cmpl-"); }

std::string finish_reason_name(engine::StopReason reason) {
  switch (reason) {
    case engine::StopReason::EndOfGeneration:
    case engine::StopReason::StopString:
    case engine::StopReason::Cancelled:
      return "stop";
    case engine::StopReason::Length:
    case engine::StopReason::ContextFull:
      return "length";
  }
  return "stop";
}

namespace {

std::string token_text(const tokenizer::Tokenizer& tokenizer, int32_t id) {
  Result<std::string> bytes = tokenizer.token_bytes(id);
  return bytes.ok() ? *bytes : std::string();
}

ordered_json bytes_json(const std::string& text) {
  ordered_json bytes = ordered_json::array();
  for (unsigned char c : text) bytes.push_back(static_cast<int>(c));
  return bytes;
}

}  // namespace

ordered_json usage_json(int32_t prompt_tokens, int32_t completion_tokens, int32_t cached_tokens, DraftUsage drafts) {
  ordered_json usage = {{"prompt_tokens", prompt_tokens},
                        {"completion_tokens", completion_tokens},
                        {"total_tokens", prompt_tokens + completion_tokens},
                        {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
  if (drafts.drafted > 0) {
    usage["completion_tokens_details"] = {{"accepted_prediction_tokens", drafts.accepted},
                                          {"rejected_prediction_tokens", drafts.drafted - drafts.accepted}};
  }
  return usage;
}

ordered_json chat_logprobs_json(const tokenizer::Tokenizer& tokenizer,
                                const std::vector<engine::TokenLogprob>& logprobs) {
  ordered_json content = ordered_json::array();
  for (const engine::TokenLogprob& lp : logprobs) {
    const std::string text = token_text(tokenizer, lp.token);
    ordered_json top = ordered_json::array();
    for (const auto& [id, value] : lp.top) {
      const std::string t = token_text(tokenizer, id);
      top.push_back({{"token", t}, {"logprob", value}, {"bytes", bytes_json(t)}});
    }
    content.push_back({{"token", text}, {"logprob", lp.logprob}, {"bytes", bytes_json(text)}, {"top_logprobs", top}});
  }
  return {{"content", content}};
}

ordered_json completion_logprobs_json(const tokenizer::Tokenizer& tokenizer,
                                      const std::vector<engine::TokenLogprob>& logprobs, size_t text_offset) {
  ordered_json tokens = ordered_json::array();
  ordered_json token_logprobs = ordered_json::array();
  ordered_json top_logprobs = ordered_json::array();
  ordered_json offsets = ordered_json::array();
  size_t offset = text_offset;
  for (const engine::TokenLogprob& lp : logprobs) {
    const std::string text = token_text(tokenizer, lp.token);
    tokens.push_back(text);
    token_logprobs.push_back(lp.logprob);
    ordered_json top = ordered_json::object();
    for (const auto& [id, value] : lp.top) top[token_text(tokenizer, id)] = value;
    top_logprobs.push_back(top);
    offsets.push_back(offset);
    offset += text.size();
  }
  return {
      {"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top_logprobs}, {"text_offset", offsets}};
}

ordered_json completion_json(const ResponseHeader& header, bool chat, const std::vector<ChoiceState>& choices,
                             bool with_logprobs, const tokenizer::Tokenizer& tokenizer, int32_t prompt_tokens) {
  ordered_json out_choices = ordered_json::array();
  int32_t completion_tokens = 0;
  DraftUsage drafts;
  for (size_t i = 0; i < choices.size(); ++i) {
    const ChoiceState& c = choices[i];
    completion_tokens += c.completion_tokens;
    drafts.drafted += c.drafted_tokens;
    drafts.accepted += c.accepted_tokens;
    ordered_json choice{{"index", i}};
    if (chat) {
      choice["message"] = {{"role", "assistant"}, {"content", c.text}};
      if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
      if (!c.tool_calls.empty()) {
        if (c.text.empty()) choice["message"]["content"] = nullptr;
        ordered_json calls = ordered_json::array();
        for (const ToolCall& call : c.tool_calls) {
          calls.push_back({{"id", call.id},
                           {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        }
        choice["message"]["tool_calls"] = calls;
      }
      choice["logprobs"] = with_logprobs ? chat_logprobs_json(tokenizer, c.logprobs) : ordered_json();
    } else {
      choice["text"] = c.text;
      choice["logprobs"] = with_logprobs ? completion_logprobs_json(tokenizer, c.logprobs, 0) : ordered_json();
    }
    choice["finish_reason"] = c.finish_reason;
    out_choices.push_back(std::move(choice));
  }
  return {
      {"id", header.id},
      {"object", chat ? "chat.completion" : "text_completion"},
      {"created", header.created},
      {"model", header.model},
      {"choices", out_choices},
      {"usage", usage_json(prompt_tokens, completion_tokens, choices.empty() ? 0 : choices[0].cached_tokens, drafts)}};
}

ordered_json chunk_json(const ResponseHeader& header, bool chat, int32_t choice, const std::string& text,
                        const std::string& reasoning, const std::vector<engine::TokenLogprob>* logprobs,
                        const std::string& finish_reason, bool first, bool with_usage_field,
                        const tokenizer::Tokenizer& tokenizer, size_t text_offset) {
  ordered_json c{{"index", choice}};
  if (chat) {
    ordered_json delta = ordered_json::object();
    if (first) delta["role"] = "assistant";
    if (first || !text.empty() || (finish_reason.empty() && reasoning.empty())) delta["content"] = text;
    if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
    c["delta"] = delta;
    c["logprobs"] = logprobs != nullptr ? chat_logprobs_json(tokenizer, *logprobs) : ordered_json();
  } else {
    c["text"] = text;
    c["logprobs"] = logprobs != nullptr ? completion_logprobs_json(tokenizer, *logprobs, text_offset) : ordered_json();
  }
  c["finish_reason"] = finish_reason.empty() ? ordered_json() : ordered_json(finish_reason);
  ordered_json chunk{{"id", header.id},
                     {"object", chat ? "chat.completion.chunk" : "text_completion"},
                     {"created", header.created},
                     {"model", header.model},
                     {"choices", ordered_json::array({c})}};
  if (with_usage_field) chunk["usage"] = nullptr;
  return chunk;
}

ordered_json tool_call_deltas_chunk_json(const ResponseHeader& header, int32_t choice,
                                         const std::vector<ToolCallDelta>& deltas, bool with_usage_field) {
  ordered_json pieces = ordered_json::array();
  for (const ToolCallDelta& d : deltas) {
    if (d.id.empty()) {
      pieces.push_back({{"index", d.index}, {"function", {{"arguments", d.arguments}}}});
    } else {
      pieces.push_back({{"index", d.index},
                        {"id", d.id},
                        {"type", "function"},
                        {"function", {{"name", d.name}, {"arguments", d.arguments}}}});
    }
  }
  ordered_json c{
      {"index", choice}, {"delta", {{"tool_calls", pieces}}}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
  ordered_json chunk{{"id", header.id},
                     {"object", "chat.completion.chunk"},
                     {"created", header.created},
                     {"model", header.model},
                     {"choices", ordered_json::array({c})}};
  if (with_usage_field) chunk["usage"] = nullptr;
  return chunk;
}

ordered_json tool_calls_chunk_json(const ResponseHeader& header, int32_t choice, const std::vector<ToolCall>& calls,
                                   bool with_usage_field) {
  std::vector<ToolCallDelta> deltas;
  for (size_t i = 0; i < calls.size(); ++i) {
    deltas.push_back(
        {.index = static_cast<int>(i), .id = calls[i].id, .name = calls[i].name, .arguments = calls[i].arguments});
  }
  return tool_call_deltas_chunk_json(header, choice, deltas, with_usage_field);
}

ordered_json usage_chunk_json(const ResponseHeader& header, bool chat, const ordered_json& usage) {
  return {{"id", header.id},
          {"object", chat ? "chat.completion.chunk" : "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", ordered_json::array()},
          {"usage", usage}};
}

}  // namespace gufo::server
