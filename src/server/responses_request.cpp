// Responses API request -> CompletionRequest (see responses_request.h).
#include "server/responses_request.h"

#include <string>
#include <string_view>

#include "server/json_text.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// A message's content: a string, or parts of type input_text / output_text (joined).
std::optional<std::string> content_text(const ordered_json& content, const std::string& path,
                                        std::optional<ApiError>& error) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    error = bad_request("'" + path + "' must be a string or an array of content parts", path, "invalid_type");
    return std::nullopt;
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string at = path + "[" + std::to_string(i) + "]";
    const ordered_json* type = json_member(content[i], "type");
    const ordered_json* body = json_member(content[i], "text");
    if (type == nullptr || (*type != "input_text" && *type != "output_text" && *type != "text")) {
      error = bad_request("'" + at + "': content parts of type " + (type ? type->dump() : "null") +
                              " are not supported (this model reads text only)",
                          at + ".type");
      return std::nullopt;
    }
    if (body == nullptr || !body->is_string()) {
      error = bad_request("'" + at + ".text' must be a string", at + ".text", "invalid_type");
      return std::nullopt;
    }
    if (i > 0) text += "\n";
    text += body->get<std::string>();
  }
  return text;
}

// `input` -> chat messages; consecutive function calls join one assistant message.
std::optional<ordered_json> input_messages(const ordered_json& input, std::optional<ApiError>& error) {
  ordered_json messages = ordered_json::array();
  if (input.is_string()) {
    messages.push_back({{"role", "user"}, {"content", input}});
    return messages;
  }
  if (!input.is_array() || input.empty()) {
    error = bad_request("'input' must be a string or a non-empty array of items", "input", "invalid_type");
    return std::nullopt;
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const ordered_json& item = input[i];
    const std::string at = "input[" + std::to_string(i) + "]";
    const ordered_json* type = json_member(item, "type");
    const std::string kind = type != nullptr && type->is_string() ? type->get<std::string>() : "message";
    if (kind == "message") {
      const ordered_json* role = json_member(item, "role");
      if (role == nullptr || (*role != "user" && *role != "assistant" && *role != "system" && *role != "developer")) {
        error = bad_request("'" + at + ".role' must be user, assistant, system or developer", at + ".role");
        return std::nullopt;
      }
      const ordered_json* content = json_member(item, "content");
      if (content == nullptr) {
        error = bad_request("'" + at + ".content' is required", at + ".content", "missing_required_parameter");
        return std::nullopt;
      }
      std::optional<std::string> text = content_text(*content, at + ".content", error);
      if (!text) return std::nullopt;
      messages.push_back({{"role", *role == "developer" ? "system" : *role}, {"content", *text}});
    } else if (kind == "function_call") {
      const ordered_json* call_id = json_member(item, "call_id");
      const ordered_json* name = json_member(item, "name");
      const ordered_json* arguments = json_member(item, "arguments");
      if (call_id == nullptr || !call_id->is_string() || name == nullptr || !name->is_string() ||
          arguments == nullptr || !arguments->is_string()) {
        error = bad_request("'" + at + "' needs string 'call_id', 'name' and 'arguments'", at, "invalid_type");
        return std::nullopt;
      }
      const ordered_json call{
          {"id", *call_id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", *arguments}}}};
      if (messages.empty() || messages.back()["role"] != "assistant" || !messages.back().contains("tool_calls")) {
        messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", ordered_json::array()}});
      }
      messages.back()["tool_calls"].push_back(call);
    } else if (kind == "function_call_output") {
      const ordered_json* call_id = json_member(item, "call_id");
      const ordered_json* output = json_member(item, "output");
      if (call_id == nullptr || !call_id->is_string() || output == nullptr) {
        error = bad_request("'" + at + "' needs a string 'call_id' and an 'output'", at, "invalid_type");
        return std::nullopt;
      }
      std::optional<std::string> text = content_text(*output, at + ".output", error);
      if (!text) return std::nullopt;
      messages.push_back({{"role", "tool"}, {"tool_call_id", *call_id}, {"content", *text}});
    } else if (kind == "reasoning") {
      continue;  // earlier thoughts: the template drops them from past turns anyway
    } else {
      error = bad_request("'" + at + ".type' " + type->dump() + " is not supported", at + ".type");
      return std::nullopt;
    }
  }
  return messages;
}

// Flat function tools -> chat tools.
std::optional<ordered_json> chat_tools(const ordered_json& tools, std::optional<ApiError>& error) {
  if (!tools.is_array()) {
    error = bad_request("'tools' must be an array", "tools", "invalid_type");
    return std::nullopt;
  }
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string at = "tools[" + std::to_string(i) + "]";
    const ordered_json* type = json_member(tools[i], "type");
    if (type == nullptr || *type != "function") {
      error = bad_request("'" + at + ".type' must be 'function' (the only tools this server runs)", at + ".type");
      return std::nullopt;
    }
    ordered_json function{{"name", tools[i].value("name", ordered_json())}};
    for (const char* key : {"description", "parameters", "strict"}) {
      if (const ordered_json* value = json_member(tools[i], key)) function[key] = *value;
    }
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return out;
}

}  // namespace

std::variant<ResponsesRequest, ApiError> parse_responses_request(const ordered_json& body, const ordered_json* previous,
                                                                 const RequestLimits& limits) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object", "", "invalid_type");
  ResponsesRequest out;
  std::optional<ApiError> error;
  const ordered_json* input = json_member(body, "input");
  if (input == nullptr) return bad_request("'input' is required", "input", "missing_required_parameter");
  std::optional<ordered_json> messages = input_messages(*input, error);
  if (!messages) return *error;
  out.input_messages = *messages;

  ordered_json chat{{"messages", ordered_json::array()}};
  if (const ordered_json* instructions = json_member(body, "instructions")) {
    if (!instructions->is_string())
      return bad_request("'instructions' must be a string", "instructions", "invalid_type");
    out.instructions = instructions->get<std::string>();
    chat["messages"].push_back({{"role", "system"}, {"content", *out.instructions}});
  }
  if (previous != nullptr) {
    for (const ordered_json& m : *previous) chat["messages"].push_back(m);
  }
  for (const ordered_json& m : *messages) chat["messages"].push_back(m);
  if (const ordered_json* tools = json_member(body, "tools")) {
    std::optional<ordered_json> converted = chat_tools(*tools, error);
    if (!converted) return *error;
    chat["tools"] = *converted;
  }
  if (const ordered_json* choice = json_member(body, "tool_choice")) {
    // {"type": "function", "name": ...} is flat here; chat's names it inside "function".
    const ordered_json* name = json_member(*choice, "name");
    chat["tool_choice"] =
        name != nullptr ? ordered_json{{"type", "function"}, {"function", {{"name", *name}}}} : *choice;
  }
  if (const ordered_json* max = json_member(body, "max_output_tokens")) chat["max_tokens"] = *max;
  // text.format is the Responses API's response_format ({type: text | json_object | json_schema}).
  if (const ordered_json* text = json_member(body, "text")) {
    if (const ordered_json* format = json_member(*text, "format")) {
      chat["response_format"] = *format;
      // {type: "json_schema", name, schema, strict} is flat here; chat's nests it in json_schema.
      if (format->is_object() && format->value("type", ordered_json()) == "json_schema") {
        ordered_json nested = *format;
        nested.erase("type");
        chat["response_format"] = ordered_json{{"type", "json_schema"}, {"json_schema", std::move(nested)}};
      }
    }
  }
  for (const char* key : {"model", "stream", "temperature", "top_p", "user", "parallel_tool_calls"}) {
    if (const ordered_json* value = json_member(body, key)) chat[key] = *value;
  }
  if (const ordered_json* id = json_member(body, "previous_response_id")) {
    if (!id->is_string())
      return bad_request("'previous_response_id' must be a string", "previous_response_id", "invalid_type");
    out.previous_response_id = id->get<std::string>();
  }
  if (const ordered_json* store = json_member(body, "store")) {
    if (!store->is_boolean()) return bad_request("'store' must be a boolean", "store", "invalid_type");
    out.store = store->get<bool>();
  }
  ParsedRequest parsed = parse_completion_request(chat, /*chat=*/true, limits);
  if (auto* e = std::get_if<ApiError>(&parsed)) {
    if (e->param == "max_tokens") e->param = "max_output_tokens";
    // The chat field's name, as the client wrote it here.
    for (std::string* text : {&e->param, &e->message}) {
      if (const size_t at = text->find("response_format.json_schema"); at != std::string::npos) {
        text->replace(at, std::string_view("response_format.json_schema").size(), "text.format");
      }
      if (const size_t at = text->find("response_format"); at != std::string::npos) {
        text->replace(at, std::string_view("response_format").size(), "text.format");
      }
    }
    if (e->param == "tool_choice.function.name") e->param = "tool_choice.name";
    // A tool is flat here: tools[i].function.parameters is tools[i].parameters.
    for (std::string* text : {&e->param, &e->message}) {
      if (const size_t at = text->find("].function.parameters"); at != std::string::npos) {
        text->replace(at, std::string_view("].function.parameters").size(), "].parameters");
      }
    }
    return *e;
  }
  out.request = std::move(std::get<CompletionRequest>(parsed));
  out.request.max_tokens_is_bound = true;
  return out;
}

}  // namespace gufo::server
