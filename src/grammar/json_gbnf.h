// RFC 8259 JSON as GBNF: what `response_format: {"type": "json_object"}` constrains an answer
// to (a JSON object, as OpenAI's JSON mode promises), and the building block of the JSON
// Schema compiler. Whitespace between tokens is bounded (at most one newline and some
// indentation at a time), so that a model cannot fill its budget with blanks and still
// "match"; as llama.cpp's json.gbnf: one space, or a newline and some indentation. The answer
// may begin with a few blanks (a reasoning model's "\n\n" after </think>).
// Tested by tests/unit/grammar/gbnf_test.cpp.
#pragma once

#include <string_view>

namespace gufo::grammar {

inline constexpr std::string_view kJsonObjectGbnf = R"gbnf(
root   ::= [ \t\n]{0,4} object
value  ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( "," ws member )* )? "}"
member ::= string ws ":" ws value ws
array  ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
string ::= "\"" char* "\""
char   ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" hex hex hex hex )
hex    ::= [0-9a-fA-F]
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws     ::= ( " " | "\n" [ \t]{0,20} )?
)gbnf";

}  // namespace gufo::grammar
