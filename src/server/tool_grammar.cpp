// Tool-call grammars (see tool_grammar.h).
#include "server/tool_grammar.h"

#include <algorithm>
#include <vector>

#include "grammar/gbnf_text.h"
#include "grammar/link.h"
#include "grammar/matcher.h"
#include "grammar/trigger.h"
#include "server/grammar_cache.h"
#include "server/tool_calls.h"

namespace gufo::server {

using nlohmann::ordered_json;

namespace {

std::string compact(const ordered_json& value) {
  return value.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

const char* form_name(ToolCallForm form) {
  switch (form) {
    case ToolCallForm::Calls:
      return "calls";
    case ToolCallForm::AfterText:
      return "after_text";
    case ToolCallForm::OrAnswer:
      return "or_answer";
  }
  return "calls";
}

// The glue GBNF around the tools' argument grammars (parts "tool-0", "tool-1", ...), in the
// syntax of the model's template (tool_calls.h).
// NOTE(tools): Hermes: the exact text Qwen's template renders a call as, and between calls
// "\n". Llama 3: {"name": "NAME", "parameters": ARGS}, as Llama 3.1's template renders one,
// and one call only (its template takes no more). Either may open with up to two newlines (a
// reasoning model's "\n\n" after </think>).
Result<std::string> glue_gbnf(const std::string& form, bool parallel, const ordered_json& tools, ToolSyntax syntax) {
  const bool llama3 = syntax == ToolSyntax::Llama3;
  std::string names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const std::string name = compact(tools[i][0]);  // a JSON string, quoted as the parser reads it
    names += std::string(i ? " | " : "") +
             grammar::gbnf_literal(name + (llama3 ? ", \"parameters\": " : ", \"arguments\": ")) + " tool-" +
             std::to_string(i);
  }
  const std::string_view open = tool_call_open(syntax);
  std::string text = "call ::= " + grammar::gbnf_literal(open) + " call-body\n";
  if (llama3) {
    text += "call-body ::= ( " + names + " ) \"}\"\n";
  } else {
    text += "call-body ::= " + grammar::gbnf_literal("\n{\"name\": ") + " ( " + names + " ) " +
            grammar::gbnf_literal("}\n" + std::string(kToolCallClose)) + "\n";
  }
  const std::string more = parallel && !llama3 ? " ( \"\\n\" call )*" : "";
  text += "calls ::= [\\n]{0,2} call" + more + "\n";
  if (form == "calls") return "root ::= calls\n" + text;
  if (form == "or_answer") return "root ::= answer | calls\n" + text;
  // after_text: the trigger is the call's opening; the rest of that call and any more follow.
  GUFO_ASSIGN_OR_RETURN(std::string free, grammar::text_until_trigger_gbnf("free", open, "rest"));
  return "root ::= free-0\nrest ::= call-body" + more + "\n" + free + text;
}

// The answer constraint of an OrAnswer key, compiled (through the cache).
Result<std::shared_ptr<const grammar::Grammar>> answer_grammar(const ordered_json& key) {
  const GrammarSyntax syntax = key["answer_syntax"] == "json_schema" ? GrammarSyntax::JsonSchema : GrammarSyntax::Gbnf;
  return compiled_grammar(key["answer"].get<std::string>(), syntax);
}

}  // namespace

Result<ordered_json> tool_parameters_schema(const ordered_json* parameters) {
  if (parameters == nullptr || parameters->is_null()) {
    return ordered_json{{"type", "object"}, {"properties", ordered_json::object()}, {"additionalProperties", false}};
  }
  if (parameters->is_boolean() && parameters->get<bool>()) return ordered_json{{"type", "object"}};
  if (!parameters->is_object()) return Error{"#: a tool's parameters must be a JSON Schema object"};
  ordered_json schema = *parameters;
  const auto type = schema.find("type");
  const bool allows_object = type == schema.end() || *type == "object" ||
                             (type->is_array() && std::find(type->begin(), type->end(), "object") != type->end());
  if (!allows_object) return Error{"#/type: a tool's arguments are a JSON object, not " + compact(*type)};
  schema["type"] = "object";
  return schema;
}

std::string tool_grammar_key(ToolCallForm form, const CompletionRequest& request) {
  ordered_json tools = ordered_json::array();
  for (size_t i = 0; i < request.callable_tools.size(); ++i) {
    tools.push_back({request.callable_tools[i], request.tool_parameters[i]});
  }
  ordered_json key{{"form", form_name(form)},
                   {"syntax", request.tool_syntax == ToolSyntax::Llama3 ? "llama3" : "hermes"},
                   {"parallel", request.parallel_tool_calls},
                   {"tools", tools}};
  if (form == ToolCallForm::OrAnswer && request.grammar) {
    key["answer"] = *request.grammar;
    key["answer_syntax"] = request.grammar_syntax == GrammarSyntax::JsonSchema ? "json_schema" : "gbnf";
  }
  return compact(key);
}

Result<grammar::Grammar> compile_tool_grammar(const std::string& key_text) {
  const ordered_json key = ordered_json::parse(key_text, nullptr, /*allow_exceptions=*/false);
  if (!key.is_object() || !key.contains("tools") || key["tools"].empty()) return Error{"no tools to call"};
  std::vector<grammar::LinkedPart> parts;
  for (size_t i = 0; i < key["tools"].size(); ++i) {
    const ordered_json& tool = key["tools"][i];
    Result<std::shared_ptr<const grammar::Grammar>> arguments =
        compiled_grammar(compact(tool[1]), GrammarSyntax::JsonSchema);
    if (!arguments.ok()) return Error{"tool '" + tool[0].get<std::string>() + "': " + arguments.error().message};
    parts.push_back({"tool-" + std::to_string(i), std::move(arguments).value()});
  }
  const std::string form = key["form"].get<std::string>();
  if (form == "or_answer") {
    GUFO_ASSIGN_OR_RETURN(std::shared_ptr<const grammar::Grammar> answer, answer_grammar(key));
    parts.push_back({"answer", std::move(answer)});
  }
  const ToolSyntax syntax = key.value("syntax", "hermes") == "llama3" ? ToolSyntax::Llama3 : ToolSyntax::Hermes;
  GUFO_ASSIGN_OR_RETURN(const std::string glue, glue_gbnf(form, key["parallel"].get<bool>(), key["tools"], syntax));
  return grammar::link_grammars(glue, parts);
}

Result<std::optional<ToolConstraint>> tool_constraint(const CompletionRequest& request) {
  if (!request.chat || !request.tools || request.callable_tools.empty()) return std::optional<ToolConstraint>();
  using Mode = ToolChoice::Mode;
  const bool forced = request.tool_choice.mode == Mode::Required || request.tool_choice.mode == Mode::Named;
  const ToolCallForm form = forced            ? ToolCallForm::Calls
                            : request.grammar ? ToolCallForm::OrAnswer
                                              : ToolCallForm::AfterText;
  ToolConstraint out;
  GUFO_ASSIGN_OR_RETURN(out.calls,
                        compiled_grammar(tool_grammar_key(ToolCallForm::Calls, request), GrammarSyntax::ToolCalls));
  out.answer = out.calls;
  if (form != ToolCallForm::Calls) {
    GUFO_ASSIGN_OR_RETURN(out.answer, compiled_grammar(tool_grammar_key(form, request), GrammarSyntax::ToolCalls));
  }
  return std::optional<ToolConstraint>(std::move(out));
}

bool is_tool_calls(const std::shared_ptr<const grammar::Grammar>& calls, std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return false;
  const size_t last = text.find_last_not_of(" \t\r\n");
  grammar::Matcher matcher(calls);
  return matcher.accept(text.substr(first, last - first + 1)) && matcher.can_end();
}

}  // namespace gufo::server
