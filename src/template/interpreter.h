// Interpreter: walks a parsed template (ast.h) with a scope of variables and renders text.
// Design: expressions evaluate to Values (value.h); statements append to one output string;
// for-loop bodies and macro calls get their own Scope, as in Jinja2 (so {% set %} inside a loop
// does not leak; namespace() is the way out). Every step is counted and output, recursion,
// range() and string sizes are capped, so untrusted templates cannot hang or exhaust memory.
// Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/result.h"
#include "template/ast.h"
#include "template/callable.h"

namespace gufo::tmpl {

struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;
  int64_t max_steps = 5'000'000;  // expression evaluations and statements, in all
  int max_depth = 600;            // nested evaluation (expressions, statements, macro calls)
  int max_macro_depth = 128;
};

// Renders `body` with `globals` (template variables and global functions) as the outer scope.
Result<std::string> render_body(const Body& body, const std::shared_ptr<Scope>& globals,
                                const RenderLimits& limits = {});

}  // namespace gufo::tmpl
