// Lexer: chat-template source to tokens. First the preprocessing that transformers' Jinja2
// settings imply, exactly as @huggingface/jinja does it (drop one trailing newline, lstrip_blocks,
// trim_blocks, drop {% generation %} tags), then text / tag / expression tokens with line numbers.
// Tested through tests/unit/template/template_test.cpp (whitespace control, errors).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace gufo::tmpl {

enum class TokenKind {
  Text,        // literal template text
  BlockOpen,   // {%
  BlockClose,  // %}
  VarOpen,     // {{
  VarClose,    // }}
  Name,
  String,
  Integer,
  Float,
  Operator,  // + - * / // % ** ~ == != < <= > >= = | . , : ( ) [ ] { }
  End,
};

struct Token {
  TokenKind kind = TokenKind::End;
  std::string text;  // text, name, unescaped string, number digits, operator
  int line = 1;
};

// NOTE(template): untrusted templates; 1 MiB is far above any real chat template (~10 KiB).
constexpr size_t kMaxTemplateBytes = size_t{1} << 20;

// Errors read "chat template line N: ...".
Result<std::vector<Token>> tokenize_template(const std::string& source);

}  // namespace gufo::tmpl
