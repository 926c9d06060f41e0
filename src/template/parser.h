// Parser: tokens to the syntax tree (ast.h), following Jinja2's grammar and operator precedence
// (filters and tests bind tighter than arithmetic: 'a' + x | trim is 'a' + (x | trim)).
// Unknown tags and unsupported syntax are errors naming the line and the construct.
// Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <vector>

#include "core/result.h"
#include "template/ast.h"
#include "template/lexer.h"

namespace gufo::tmpl {

// NOTE(template): caps recursion on untrusted input; real templates nest fewer than 10 deep.
constexpr int kMaxParseDepth = 256;

Result<Body> parse_template(const std::vector<Token>& tokens);

}  // namespace gufo::tmpl
