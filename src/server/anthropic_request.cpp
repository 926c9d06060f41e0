// Anthropic Messages request -> CompletionRequest (see anthropic_request.h).
#include "server/anthropic_request.h"

#include "server/json_text.h"

#include <optional>
#include <string>

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// The first problem, with Anthropic's dotted field path ("messages.0.content").
class Problem {
 public:
  bool failed() const { return error_.has_value(); }
  const ApiError& error() const { return *error_; }
  void fail(const std::string& path, const std::string& what) {
    if (!error_) error_ = bad_request(path + ": " + what, path);
  }

 private:
  std::optional<ApiError> error_;
};

// The text of a string or of an array of {"type": "text"} blocks (system, tool_result content).
std::optional<std::string> plain_text(const ordered_json& value, const std::string& path, Problem& problem) {
  if (value.is_string()) return value.get<std::string>();
  if (!value.is_array()) {
    problem.fail(path, "must be a string or an array of text blocks");
    return std::nullopt;
  }
  std::string text;
  for (size_t i = 0; i < value.size(); ++i) {
    const ordered_json& block = value[i];
    const std::string at = path + "." + std::to_string(i);
    const ordered_json* type = json_member(block, "type");
    const ordered_json* body = json_member(block, "text");
    if (type == nullptr || *type != "text" || body == nullptr || !body->is_string()) {
      problem.fail(at, "must be a text block ({\"type\": \"text\", \"text\": ...})");
      return std::nullopt;
    }
    if (i > 0) text += "\n";
    text += body->get<std::string>();
  }
  return text;
}

// One Anthropic message -> one or more OpenAI-shaped messages appended to `out`.
void convert_message(const ordered_json& message, const std::string& path, ordered_json& out, Problem& problem) {
  const ordered_json* role = json_member(message, "role");
  if (role == nullptr || (*role != "user" && *role != "assistant")) {
    return problem.fail(path + ".role", "must be 'user' or 'assistant'");
  }
  const ordered_json* content = json_member(message, "content");
  if (content == nullptr) return problem.fail(path + ".content", "Field required");
  const bool user = *role == "user";
  if (content->is_string()) {
    out.push_back({{"role", *role}, {"content", *content}});
    return;
  }
  if (!content->is_array()) return problem.fail(path + ".content", "must be a string or an array of content blocks");
  std::string text;
  std::string thinking;
  ordered_json tool_calls = ordered_json::array();
  for (size_t i = 0; i < content->size(); ++i) {
    const ordered_json& block = (*content)[i];
    const std::string at = path + ".content." + std::to_string(i);
    const ordered_json* type = json_member(block, "type");
    if (type == nullptr || !type->is_string()) return problem.fail(at + ".type", "Field required");
    const std::string kind = type->get<std::string>();
    if (kind == "text") {
      const ordered_json* body = json_member(block, "text");
      if (body == nullptr || !body->is_string()) return problem.fail(at + ".text", "must be a string");
      if (!text.empty()) text += "\n";
      text += body->get<std::string>();
    } else if (kind == "tool_result" && user) {
      const ordered_json* id = json_member(block, "tool_use_id");
      if (id == nullptr || !id->is_string()) return problem.fail(at + ".tool_use_id", "must be a string");
      std::string result;
      if (const ordered_json* body = json_member(block, "content")) {
        const std::optional<std::string> as_text = plain_text(*body, at + ".content", problem);
        if (!as_text) return;
        result = *as_text;
      }
      out.push_back({{"role", "tool"}, {"tool_call_id", *id}, {"content", result}});
    } else if (kind == "tool_use" && !user) {
      const ordered_json* id = json_member(block, "id");
      const ordered_json* name = json_member(block, "name");
      const ordered_json* input = json_member(block, "input");
      if (id == nullptr || !id->is_string()) return problem.fail(at + ".id", "must be a string");
      if (name == nullptr || !name->is_string()) return problem.fail(at + ".name", "must be a string");
      if (input == nullptr || !input->is_object()) return problem.fail(at + ".input", "must be an object");
      tool_calls.push_back(
          {{"id", *id}, {"type", "function"}, {"function", {{"name", *name}, {"arguments", input->dump()}}}});
    } else if ((kind == "thinking" || kind == "redacted_thinking") && !user) {
      if (const ordered_json* body = json_member(block, "thinking"); body != nullptr && body->is_string()) {
        thinking += body->get<std::string>();
      }
    } else {
      return problem.fail(at + ".type", "'" + kind + "' blocks are not supported in " + role->get<std::string>() +
                                            " messages (this model reads text only)");
    }
  }
  if (!text.empty() || !tool_calls.empty() || !thinking.empty() || !user) {
    ordered_json converted{{"role", *role}, {"content", text}};
    if (!tool_calls.empty()) converted["tool_calls"] = std::move(tool_calls);
    if (!thinking.empty()) converted["reasoning_content"] = std::move(thinking);
    out.push_back(std::move(converted));
  }
}

ordered_json convert_tools(const ordered_json& tools, Problem& problem) {
  ordered_json functions = ordered_json::array();
  if (!tools.is_array()) {
    problem.fail("tools", "must be an array");
    return functions;
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    const ordered_json& tool = tools[i];
    const std::string at = "tools." + std::to_string(i);
    const ordered_json* name = json_member(tool, "name");
    if (name == nullptr || !name->is_string() || name->get<std::string>().empty()) {
      problem.fail(at + ".name", "must be a non-empty string");
      return functions;
    }
    ordered_json function{{"name", *name}};
    if (const ordered_json* description = json_member(tool, "description")) function["description"] = *description;
    const ordered_json* schema = json_member(tool, "input_schema");
    if (schema == nullptr || !schema->is_object()) {
      problem.fail(at + ".input_schema", "must be a JSON schema object");
      return functions;
    }
    function["parameters"] = *schema;
    functions.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  return functions;
}

// {"type": "auto" | "any" | "tool" | "none", "name": ...} -> OpenAI's tool_choice.
std::optional<ordered_json> convert_tool_choice(const ordered_json& choice, Problem& problem) {
  const ordered_json* type = json_member(choice, "type");
  if (type == nullptr || !type->is_string()) {
    problem.fail("tool_choice.type", "Field required");
    return std::nullopt;
  }
  if (*type == "auto") return ordered_json("auto");
  if (*type == "any") return ordered_json("required");
  if (*type == "none") return ordered_json("none");
  if (*type == "tool") {
    const ordered_json* name = json_member(choice, "name");
    if (name == nullptr || !name->is_string()) {
      problem.fail("tool_choice.name", "must be a string");
      return std::nullopt;
    }
    return ordered_json{{"type", "function"}, {"function", {{"name", *name}}}};
  }
  problem.fail("tool_choice.type", "must be 'auto', 'any', 'tool' or 'none'");
  return std::nullopt;
}

// The OpenAI parser's field names back to Anthropic's, for its errors.
std::string anthropic_param(const std::string& param) {
  if (param == "stop") return "stop_sequences";
  if (param == "tool_choice.function.name") return "tool_choice.name";
  if (param == "chat_template_kwargs.enable_thinking") return "thinking";
  if (param == "parallel_tool_calls") return "tool_choice.disable_parallel_tool_use";
  // tools[3].function.parameters -> tools.3.input_schema
  if (param.starts_with("tools[") && param.ends_with("].function.parameters")) {
    return "tools." + param.substr(6, param.find(']') - 6) + ".input_schema";
  }
  return param;
}

}  // namespace

ParsedRequest parse_anthropic_request(const ordered_json& body, const RequestLimits& limits, bool count_only) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object", "");
  Problem problem;
  ordered_json openai{{"messages", ordered_json::array()}};
  ordered_json& messages = openai["messages"];
  if (const ordered_json* system = json_member(body, "system")) {
    if (const std::optional<std::string> text = plain_text(*system, "system", problem); text && !text->empty()) {
      messages.push_back({{"role", "system"}, {"content", *text}});
    }
  }
  const ordered_json* turns = json_member(body, "messages");
  if (turns == nullptr || !turns->is_array() || turns->empty()) {
    problem.fail("messages", "must be a non-empty array of messages");
  } else if (turns->size() > limits.max_messages) {
    problem.fail("messages", "holds " + std::to_string(turns->size()) + " messages; the limit is " +
                                 std::to_string(limits.max_messages));
  } else {
    for (size_t i = 0; i < turns->size() && !problem.failed(); ++i) {
      convert_message((*turns)[i], "messages." + std::to_string(i), messages, problem);
    }
  }
  const ordered_json* max_tokens = json_member(body, "max_tokens");
  if (max_tokens == nullptr && !count_only) problem.fail("max_tokens", "Field required");
  if (max_tokens != nullptr && !count_only) openai["max_tokens"] = *max_tokens;
  if (const ordered_json* tools = json_member(body, "tools")) {
    ordered_json functions = convert_tools(*tools, problem);
    if (!functions.empty()) openai["tools"] = std::move(functions);
  }
  if (const ordered_json* choice = json_member(body, "tool_choice")) {
    if (std::optional<ordered_json> converted = convert_tool_choice(*choice, problem))
      openai["tool_choice"] = *converted;
    // disable_parallel_tool_use: at most one tool_use block (the tool grammar allows one call).
    if (const ordered_json* single = json_member(*choice, "disable_parallel_tool_use")) {
      openai["parallel_tool_calls"] = single->is_boolean() ? ordered_json(!single->get<bool>()) : *single;
    }
  }
  if (const ordered_json* thinking = json_member(body, "thinking")) {
    const ordered_json* type = json_member(*thinking, "type");
    if (type == nullptr || (*type != "enabled" && *type != "disabled")) {
      problem.fail("thinking.type", "must be 'enabled' or 'disabled'");
    } else {
      openai["chat_template_kwargs"] = {{"enable_thinking", *type == "enabled"}};
    }
  }
  if (const ordered_json* temperature = json_member(body, "temperature")) {
    if (!temperature->is_number() || temperature->get<double>() < 0.0 || temperature->get<double>() > 1.0) {
      problem.fail("temperature", "must be a number from 0 to 1");
    }
  }
  if (problem.failed()) return problem.error();
  // Anthropic's defaults: temperature 1, no top-p / top-k truncation.
  for (const char* key : {"stream", "temperature", "top_p", "top_k", "model"}) {
    if (const ordered_json* value = json_member(body, key)) openai[key] = *value;
  }
  if (const ordered_json* stops = json_member(body, "stop_sequences")) openai["stop"] = *stops;

  ParsedRequest parsed = parse_completion_request(openai, /*chat=*/true, limits);
  if (auto* error = std::get_if<ApiError>(&parsed)) {
    // The OpenAI parser names OpenAI's fields; lead with Anthropic's.
    error->param = anthropic_param(error->param);
    if (!error->param.empty()) error->message = error->param + ": " + error->message;
    return *error;
  }
  std::get<CompletionRequest>(parsed).max_tokens_is_bound = true;
  return parsed;
}

}  // namespace gufo::server
