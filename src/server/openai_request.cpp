// parse_completion_request (see openai_request.h).
#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "grammar/json_gbnf.h"
#include "server/json_text.h"
#include "server/reasoning.h"
#include "server/tool_grammar.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

// Reads optional fields of one JSON object; the first problem is kept (later reads are then
// no-ops), so the parser reads top to bottom.
class Fields {
 public:
  explicit Fields(const ordered_json& body) : body_(body) {}

  bool failed() const { return error_.has_value(); }
  const ApiError& error() const { return *error_; }
  void fail(std::string message, const std::string& param, std::string code = "invalid_value") {
    if (!error_) error_ = bad_request(std::move(message), param, std::move(code));
  }

  // The value, or null when the field is absent or null.
  const ordered_json* get(const std::string& key) const {
    const auto it = body_.find(key);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }

  std::optional<double> number(const std::string& key, double lo, double hi) {
    const ordered_json* v = get(key);
    if (v == nullptr || failed()) return std::nullopt;
    if (!v->is_number()) {
      fail("'" + key + "' must be a number", key, "invalid_type");
      return std::nullopt;
    }
    const double x = v->get<double>();
    if (!std::isfinite(x) || x < lo || x > hi) {
      fail("'" + key + "' must be between " + fmt(lo) + " and " + fmt(hi) + ", not " + v->dump(), key);
      return std::nullopt;
    }
    return x;
  }

  std::optional<int64_t> integer(const std::string& key, int64_t lo, int64_t hi) {
    const ordered_json* v = get(key);
    if (v == nullptr || failed()) return std::nullopt;
    if (!v->is_number_integer() && !(v->is_number_float() && std::nearbyint(v->get<double>()) == v->get<double>())) {
      fail("'" + key + "' must be an integer", key, "invalid_type");
      return std::nullopt;
    }
    const double x = v->get<double>();
    if (x < static_cast<double>(lo) || x > static_cast<double>(hi)) {
      fail("'" + key + "' must be between " + std::to_string(lo) + " and " + std::to_string(hi) + ", not " + v->dump(),
           key);
      return std::nullopt;
    }
    return v->is_number_integer() ? v->get<int64_t>() : static_cast<int64_t>(x);
  }

  std::optional<bool> boolean(const std::string& key) {
    const ordered_json* v = get(key);
    if (v == nullptr || failed()) return std::nullopt;
    if (!v->is_boolean()) {
      fail("'" + key + "' must be a boolean", key, "invalid_type");
      return std::nullopt;
    }
    return v->get<bool>();
  }

  std::optional<std::string> string(const std::string& key) {
    const ordered_json* v = get(key);
    if (v == nullptr || failed()) return std::nullopt;
    if (!v->is_string()) {
      fail("'" + key + "' must be a string", key, "invalid_type");
      return std::nullopt;
    }
    return v->get<std::string>();
  }

 private:
  static std::string fmt(double x) {
    if (x == std::numeric_limits<double>::max()) return "inf";
    std::string s = std::to_string(x);
    while (s.size() > 1 && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }

  const ordered_json& body_;
  std::optional<ApiError> error_;
};

// Content as text: a string, null (assistant turns with tool calls), or an array of
// {"type": "text", "text": ...} parts joined with newlines.
std::optional<std::string> content_text(const ordered_json& content, const std::string& param, Fields& fields) {
  if (content.is_null()) return std::string();
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) {
    fields.fail("'" + param + "' must be a string or an array of content parts", param, "invalid_type");
    return std::nullopt;
  }
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const ordered_json& part = content[i];
    const std::string part_param = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      fields.fail("'" + part_param + "' must be an object with a 'type'", part_param, "invalid_type");
      return std::nullopt;
    }
    if (part["type"] != "text") {
      fields.fail("'" + part_param + "': content parts of type " + part["type"].dump() +
                      " are not supported (this model reads text only)",
                  part_param);
      return std::nullopt;
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      fields.fail("'" + part_param + ".text' must be a string", part_param + ".text", "invalid_type");
      return std::nullopt;
    }
    if (i > 0) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

void parse_messages(const ordered_json& body, const RequestLimits& limits, Fields& fields, CompletionRequest& out) {
  const ordered_json* messages = fields.get("messages");
  if (messages == nullptr) return fields.fail("'messages' is required", "messages", "missing_required_parameter");
  if (!messages->is_array()) return fields.fail("'messages' must be an array", "messages", "invalid_type");
  if (messages->empty()) return fields.fail("'messages' must hold at least one message", "messages");
  if (messages->size() > limits.max_messages) {
    return fields.fail("'messages' holds " + std::to_string(messages->size()) + " messages; the limit is " +
                           std::to_string(limits.max_messages),
                       "messages");
  }
  out.messages = ordered_json::array();
  for (size_t i = 0; i < messages->size(); ++i) {
    const ordered_json& m = (*messages)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return fields.fail("'" + param + "' must be an object", param, "invalid_type");
    if (!m.contains("role") || !m["role"].is_string()) {
      return fields.fail("'" + param + ".role' is required and must be a string", param + ".role", "invalid_type");
    }
    std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool") {
      return fields.fail("'" + param + ".role' must be system, developer, user, assistant or tool, not '" + role + "'",
                         param + ".role");
    }
    if (role == "developer") role = "system";  // OpenAI's newer name for the system role
    const bool has_tool_calls = m.contains("tool_calls") && !m["tool_calls"].is_null();
    if (has_tool_calls && (role != "assistant" || !m["tool_calls"].is_array())) {
      return fields.fail("'" + param + ".tool_calls' must be an array on an assistant message", param + ".tool_calls",
                         "invalid_type");
    }
    if (!m.contains("content") && !has_tool_calls) {
      return fields.fail("'" + param + ".content' is required", param + ".content", "missing_required_parameter");
    }
    ordered_json normalized = m;
    normalized["role"] = role;
    if (m.contains("content")) {
      const std::optional<std::string> text = content_text(m["content"], param + ".content", fields);
      if (!text) return;
      normalized["content"] = *text;
    } else {
      normalized["content"] = "";
    }
    out.messages.push_back(std::move(normalized));
  }
}

void parse_stop(Fields& fields, const RequestLimits& limits, CompletionRequest& out) {
  const ordered_json* stop = fields.get("stop");
  if (stop == nullptr || fields.failed()) return;
  if (stop->is_string()) {
    out.stop.push_back(stop->get<std::string>());
  } else if (stop->is_array()) {
    if (stop->size() > limits.max_stop) {
      return fields.fail(
          "'stop' holds " + std::to_string(stop->size()) + " strings; the limit is " + std::to_string(limits.max_stop),
          "stop");
    }
    for (const ordered_json& s : *stop) {
      if (!s.is_string()) return fields.fail("'stop' must be a string or an array of strings", "stop", "invalid_type");
      out.stop.push_back(s.get<std::string>());
    }
  } else {
    return fields.fail("'stop' must be a string or an array of strings", "stop", "invalid_type");
  }
  for (const std::string& s : out.stop) {
    if (s.empty()) return fields.fail("'stop' strings must not be empty", "stop");
    if (s.size() > limits.max_stop_length) {
      return fields.fail("'stop' strings are limited to " + std::to_string(limits.max_stop_length) + " bytes", "stop");
    }
  }
}

// Gufo's speculative decoding fields: "spec" ("ngram" or "none"; the server holds no draft
// model), "draft_max" and "draft_min" (their order checked once both are known).
void parse_spec(Fields& fields, CompletionRequest& out) {
  if (const std::optional<std::string> name = fields.string("spec")) {
    const std::optional<engine::SpecMode> mode = engine::spec_mode_named(*name);
    if (mode == engine::SpecMode::Draft) {
      return fields.fail("'spec': draft needs a draft model, which this server does not hold; ngram drafts without one",
                         "spec");
    }
    if (!mode) return fields.fail("'spec' must be \"ngram\" or \"none\", not \"" + *name + "\"", "spec");
    out.spec = *mode;
  }
  if (const std::optional<int64_t> n = fields.integer("draft_max", 1, engine::kMaxDraftTokens)) {
    out.draft_max = static_cast<int32_t>(*n);
  }
  if (const std::optional<int64_t> n = fields.integer("draft_min", 0, engine::kMaxDraftTokens)) {
    out.draft_min = static_cast<int32_t>(*n);
  }
}

// llama.cpp's "id_slot": the engine slot the request runs in (-1: any; server/slots.h).
void parse_slot(Fields& fields, CompletionRequest& out) {
  if (const std::optional<int64_t> slot = fields.integer("id_slot", -1, 1 << 20)) {
    out.slot = static_cast<int32_t>(*slot);
  }
}

void parse_logit_bias(Fields& fields, const RequestLimits& limits, CompletionRequest& out) {
  const ordered_json* bias = fields.get("logit_bias");
  if (bias == nullptr || fields.failed()) return;
  if (!bias->is_object())
    return fields.fail("'logit_bias' must be an object of token ids to numbers", "logit_bias", "invalid_type");
  if (bias->size() > limits.max_logit_bias) {
    return fields.fail("'logit_bias' holds " + std::to_string(bias->size()) + " entries; the limit is " +
                           std::to_string(limits.max_logit_bias),
                       "logit_bias");
  }
  for (const auto& [key, value] : bias->items()) {
    int64_t id = -1;
    bool digits = !key.empty() && key.size() <= 9;
    for (char c : key) digits = digits && c >= '0' && c <= '9';
    if (digits) id = std::stoll(key);
    if (id < 0 || (limits.n_vocab > 0 && id >= limits.n_vocab)) {
      return fields.fail("'logit_bias' key '" + key + "' is not a token id of this model (0.." +
                             std::to_string(limits.n_vocab - 1) + ")",
                         "logit_bias");
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < -100.0 ||
        value.get<double>() > 100.0) {
      return fields.fail("'logit_bias' values must be numbers from -100 to 100", "logit_bias");
    }
    out.sampler.logit_bias.emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
}

// One offered tool: its name and the schema of its arguments, compiled now (through the
// grammar cache, where the tool grammar finds it) so that a schema the compiler refuses is a
// 400 naming the tool's parameters and where in them it is wrong.
void parse_tool(Fields& fields, const ordered_json& tool, const std::string& at, bool compile, CompletionRequest& out) {
  const auto function = tool.is_object() ? tool.find("function") : tool.end();
  if (!tool.is_object() || function == tool.end() || !function->is_object()) {
    return fields.fail("'" + at + "' must be an object with a 'function' object", at, "invalid_type");
  }
  const auto name = function->find("name");
  if (name == function->end() || !name->is_string() || name->get<std::string>().empty()) {
    return fields.fail("'" + at + ".function.name' must be a non-empty string", at + ".function.name", "invalid_type");
  }
  const std::string param = at + ".function.parameters";
  const auto parameters = function->find("parameters");
  Result<ordered_json> schema = tool_parameters_schema(parameters == function->end() ? nullptr : &*parameters);
  if (schema.ok() && compile) {
    const Result<std::shared_ptr<const grammar::Grammar>> compiled = compiled_grammar(
        schema->dump(-1, ' ', false, ordered_json::error_handler_t::replace), GrammarSyntax::JsonSchema);
    if (!compiled.ok()) schema = compiled.error();
  }
  if (!schema.ok()) return fields.fail("'" + param + "': " + schema.error().message, param);
  out.callable_tools.push_back(name->get<std::string>());
  out.tool_parameters.push_back(std::move(schema).value());
}

// `tool_choice`: "auto", "none", "required" or {"type": "function", "function": {"name": ...}}.
void parse_tool_choice(Fields& fields, CompletionRequest& out) {
  const ordered_json* choice = fields.get("tool_choice");
  if (choice == nullptr || fields.failed()) return;
  using Mode = ToolChoice::Mode;
  if (choice->is_string()) {
    const std::string mode = choice->get<std::string>();
    if (mode == "auto")
      out.tool_choice.mode = Mode::Auto;
    else if (mode == "none")
      out.tool_choice.mode = Mode::None;
    else if (mode == "required")
      out.tool_choice.mode = Mode::Required;
    else
      return fields.fail("'tool_choice' must be 'auto', 'none', 'required' or a function, not '" + mode + "'",
                         "tool_choice");
    return;
  }
  const ordered_json* name = json_member(json_member(choice, "function"), "name");
  if (name == nullptr || !name->is_string()) {
    return fields.fail("'tool_choice' must be a string or {\"type\": \"function\", \"function\": {\"name\": ...}}",
                       "tool_choice", "invalid_type");
  }
  out.tool_choice = {.mode = Mode::Named, .name = name->get<std::string>()};
}

// `tools` (each a function with a name and a parameters schema), `tool_choice` and
// `parallel_tool_calls`. The tools' schemas are compiled unless tool_choice is "none" (then
// the model is not even told of them).
void parse_tools(Fields& fields, const RequestLimits& limits, CompletionRequest& out) {
  using Mode = ToolChoice::Mode;
  parse_tool_choice(fields, out);
  out.parallel_tool_calls = fields.boolean("parallel_tool_calls").value_or(true);
  const ordered_json* tools = fields.get("tools");
  if (tools != nullptr && !fields.failed()) {
    if (!tools->is_array()) return fields.fail("'tools' must be an array", "tools", "invalid_type");
    if (tools->size() > limits.max_tools) {
      return fields.fail(
          "'tools' holds " + std::to_string(tools->size()) + " tools; the limit is " + std::to_string(limits.max_tools),
          "tools");
    }
    for (size_t i = 0; i < tools->size() && !fields.failed(); ++i) {
      parse_tool(fields, (*tools)[i], "tools[" + std::to_string(i) + "]", out.tool_choice.mode != Mode::None, out);
    }
    if (!tools->empty()) out.tools = *tools;
  }
  if (fields.failed()) return;
  if (out.tool_choice.mode == Mode::Named) {
    const auto named = std::find(out.callable_tools.begin(), out.callable_tools.end(), out.tool_choice.name);
    if (named == out.callable_tools.end()) {
      return fields.fail("'tool_choice' names '" + out.tool_choice.name + "', which is not one of the 'tools'",
                         "tool_choice.function.name");
    }
    ordered_json parameters = out.tool_parameters[static_cast<size_t>(named - out.callable_tools.begin())];
    out.callable_tools = {out.tool_choice.name};
    out.tool_parameters = {std::move(parameters)};
  }
  if (out.tool_choice.mode != Mode::Auto && out.tool_choice.mode != Mode::None && !out.tools) {
    return fields.fail("'tool_choice' asks for a tool call but no 'tools' are given", "tool_choice");
  }
  if (out.tool_choice.mode == Mode::None) {  // the model is not told of tools it may not call
    out.tools.reset();
    out.callable_tools.clear();
    out.tool_parameters.clear();
  }
}

// A forced tool call leaves no room for another constraint on the answer: both cannot hold.
void check_tools_and_constraint(Fields& fields, const CompletionRequest& out) {
  using Mode = ToolChoice::Mode;
  if (fields.failed() || !out.grammar || !out.tools) return;
  if (out.tool_choice.mode != Mode::Required && out.tool_choice.mode != Mode::Named) return;
  const std::string param = out.grammar_param.substr(0, out.grammar_param.find('.'));
  fields.fail("'" + param + "' cannot apply when 'tool_choice' forces a tool call (the answer is the call); " +
                  "use tool_choice 'auto' to allow either",
              param);
}

}  // namespace

namespace {

// A JSON Schema constraint, compiled now (through the grammar cache, so the engine's lookup
// finds it) so that a schema the compiler refuses is a 400 naming where it is wrong.
void use_schema(Fields& fields, CompletionRequest& out, const ordered_json& schema, const std::string& param) {
  if (!schema.is_object() && !schema.is_boolean()) {
    return fields.fail("'" + param + "' must be a JSON Schema (an object or a boolean)", param, "invalid_type");
  }
  std::string text = schema.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
  Result<std::shared_ptr<const grammar::Grammar>> compiled = compiled_grammar(text, GrammarSyntax::JsonSchema);
  if (!compiled.ok()) return fields.fail("'" + param + "': " + compiled.error().message, param);
  out.grammar = std::move(text);
  out.grammar_syntax = GrammarSyntax::JsonSchema;
  out.grammar_param = param;
}

// response_format {type: "json_schema", json_schema: {name, schema, strict}}. A missing schema
// is the empty one (any JSON value), as OpenAI allows; strict changes nothing here, since
// the answer always follows the schema exactly.
void parse_json_schema_format(Fields& fields, CompletionRequest& out, const ordered_json& format) {
  const auto spec = format.find("json_schema");
  if (spec == format.end() || !spec->is_object()) {
    return fields.fail("'response_format.json_schema' must be an object with the 'schema'",
                       "response_format.json_schema", "invalid_type");
  }
  if (const auto name = spec->find("name"); name != spec->end() && !name->is_string()) {
    return fields.fail("'response_format.json_schema.name' must be a string", "response_format.json_schema.name",
                       "invalid_type");
  }
  if (const auto strict = spec->find("strict"); strict != spec->end() && !strict->is_null() && !strict->is_boolean()) {
    return fields.fail("'response_format.json_schema.strict' must be a boolean", "response_format.json_schema.strict",
                       "invalid_type");
  }
  const auto schema = spec->find("schema");
  use_schema(fields, out, schema != spec->end() ? *schema : ordered_json(true), "response_format.json_schema.schema");
}

// What the answer is constrained to: OpenAI's response_format, or llama.cpp's 'grammar' (GBNF
// text; empty means none, as in llama.cpp) or 'json_schema'. One of them at most.
void parse_constraint(Fields& fields, CompletionRequest& out) {
  if (const ordered_json* format = fields.get("response_format"); format != nullptr && !fields.failed()) {
    const auto type = format->is_object() ? format->find("type") : format->end();
    if (!format->is_object() || type == format->end() || !type->is_string()) {
      return fields.fail("'response_format' must be an object with a string 'type'", "response_format", "invalid_type");
    }
    if (*type == "json_object") {
      if (const auto schema = format->find("schema"); schema != format->end()) {  // llama.cpp's extension
        use_schema(fields, out, *schema, "response_format.schema");
      } else {
        out.grammar = std::string(grammar::kJsonObjectGbnf);
        out.grammar_param = "response_format";
      }
    } else if (*type == "json_schema") {
      parse_json_schema_format(fields, out, *format);
    } else if (*type != "text") {
      return fields.fail("'response_format.type' must be text, json_object or json_schema, not " + type->dump(),
                         "response_format.type");
    }
  }
  if (const std::optional<std::string> gbnf = fields.string("grammar"); gbnf && !gbnf->empty()) {
    if (out.grammar) return fields.fail("give 'response_format' or 'grammar', not both", "grammar");
    out.grammar = *gbnf;
    out.grammar_param = "grammar";
  }
  if (const ordered_json* schema = fields.get("json_schema"); schema != nullptr && !fields.failed()) {
    if (out.grammar) {
      return fields.fail("give one of 'response_format', 'grammar' and 'json_schema', not several", "json_schema");
    }
    use_schema(fields, out, *schema, "json_schema");
  }
}

}  // namespace

ParsedRequest parse_completion_request(const ordered_json& body, bool chat, const RequestLimits& limits) {
  if (!body.is_object()) return bad_request("the request body must be a JSON object", "", "invalid_type");
  Fields fields(body);
  CompletionRequest out;
  out.chat = chat;
  out.model = fields.string("model").value_or("");

  if (chat) {
    parse_messages(body, limits, fields, out);
    parse_tools(fields, limits, out);
    if (const ordered_json* kwargs = fields.get("chat_template_kwargs"); kwargs != nullptr && !fields.failed()) {
      if (!kwargs->is_object()) {
        fields.fail("'chat_template_kwargs' must be an object", "chat_template_kwargs", "invalid_type");
      } else {
        Fields inner(*kwargs);
        out.enable_thinking = inner.boolean("enable_thinking");
        if (inner.failed()) fields.fail(inner.error().message, "chat_template_kwargs.enable_thinking", "invalid_type");
      }
    }
    // llama.cpp's per-request name and values (server/reasoning.h).
    if (const std::optional<std::string> format = fields.string("reasoning_format")) {
      out.separate_reasoning = parse_reasoning_format(*format);
      if (!out.separate_reasoning) {
        fields.fail("'reasoning_format' must be " + std::string(kReasoningFormatNames) + ", not '" + *format + "'",
                    "reasoning_format");
      }
    }
  } else {
    const ordered_json* prompt = fields.get("prompt");
    if (prompt == nullptr) {
      fields.fail("'prompt' is required", "prompt", "missing_required_parameter");
    } else if (prompt->is_string()) {
      out.prompt = prompt->get<std::string>();
    } else if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
      out.prompt = (*prompt)[0].get<std::string>();
    } else {
      fields.fail("'prompt' must be a string (or an array of one string)", "prompt", "invalid_type");
    }
    out.echo = fields.boolean("echo").value_or(false);
    if (out.echo) fields.fail("'echo' is not supported", "echo");
  }

  constexpr int64_t kMaxTokens = int64_t{1} << 30;
  std::optional<int64_t> max_tokens = fields.integer("max_completion_tokens", 1, kMaxTokens);
  if (!max_tokens) max_tokens = fields.integer("max_tokens", 1, kMaxTokens);
  if (max_tokens) out.max_tokens = static_cast<int32_t>(*max_tokens);
  out.n = static_cast<int32_t>(fields.integer("n", 1, limits.max_n).value_or(1));
  out.stream = fields.boolean("stream").value_or(false);
  if (const ordered_json* options = fields.get("stream_options"); options != nullptr && !fields.failed()) {
    if (!options->is_object()) {
      fields.fail("'stream_options' must be an object", "stream_options", "invalid_type");
    } else {
      Fields inner(*options);
      out.include_usage = inner.boolean("include_usage").value_or(false);
      if (inner.failed()) fields.fail(inner.error().message, "stream_options.include_usage", "invalid_type");
    }
  }

  // OpenAI's defaults: temperature 1, top_p 1, no other truncation, no penalties.
  engine::SamplerParams& s = out.sampler;
  s.temperature = static_cast<float>(fields.number("temperature", 0.0, 2.0).value_or(1.0));
  s.top_p = static_cast<float>(fields.number("top_p", 0.0, 1.0).value_or(1.0));
  if (s.top_p <= 0.0f) fields.fail("'top_p' must be greater than 0", "top_p");
  s.top_k = static_cast<int32_t>(fields.integer("top_k", -1, 1 << 30).value_or(0));
  s.min_p = static_cast<float>(fields.number("min_p", 0.0, 1.0).value_or(0.0));
  s.presence_penalty = static_cast<float>(fields.number("presence_penalty", -2.0, 2.0).value_or(0.0));
  s.frequency_penalty = static_cast<float>(fields.number("frequency_penalty", -2.0, 2.0).value_or(0.0));
  s.repeat_penalty = static_cast<float>(fields.number("repetition_penalty", 0.01, 100.0).value_or(1.0));
  if (const std::optional<int64_t> seed =
          fields.integer("seed", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())) {
    s.seed = static_cast<uint64_t>(*seed);
    out.seeded = true;
  }
  parse_stop(fields, limits, out);
  parse_spec(fields, out);
  parse_slot(fields, out);
  parse_logit_bias(fields, limits, out);
  parse_constraint(fields, out);
  check_tools_and_constraint(fields, out);
  (void)fields.string("user");

  if (chat) {
    out.logprobs = fields.boolean("logprobs").value_or(false);
    if (const std::optional<int64_t> top = fields.integer("top_logprobs", 0, limits.max_top_logprobs)) {
      if (!out.logprobs) fields.fail("'top_logprobs' needs 'logprobs': true", "top_logprobs");
      out.top_logprobs = static_cast<int32_t>(*top);
    }
  } else if (const std::optional<int64_t> top = fields.integer("logprobs", 0, 5)) {
    out.logprobs = true;
    out.top_logprobs = static_cast<int32_t>(*top);
  }
  if (fields.failed()) return fields.error();
  return out;
}

}  // namespace gufo::server
