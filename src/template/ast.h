// The syntax tree of a chat template: expressions (Expr) and statements (Stmt), each with the
// template line it came from so runtime errors can name it. Built by parser.cpp, walked by
// interpreter.cpp. Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "template/value.h"

namespace gufo::tmpl {

enum class ExprKind {
  Literal,  // literal
  Name,     // name
  List,     // children: items
  Tuple,    // children: items
  Dict,     // children: key, value, key, value, ...
  Attr,     // children[0].name
  Index,    // children[0][children[1]]
  Slice,    // children[0][children[1]:children[2]:children[3]], absent parts are null
  Call,     // children[0](children[1..]); the last kw_names.size() args are keyword arguments
  Filter,   // children[0] | name(children[1..])
  Test,     // children[0] is [not] name(children[1..])
  Unary,    // op children[0]: "-", "+", "not"
  Binary,   // children[0] op children[1]
  And,
  Or,
  Cond,  // children[1] if children[0] else children[2] (children[2] may be null)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::Literal;
  int line = 0;
  std::string name;  // Name, Attr, Filter, Test; the operator for Unary/Binary
  Value literal;
  std::vector<ExprPtr> children;
  std::vector<std::string> kw_names;  // Call/Filter/Test: names of the trailing keyword args
  bool negate = false;                // Test: "is not"
};

enum class StmtKind {
  Text,    // text
  Output,  // {{ expr }}
  If,      // branches (cond, body)...; else_body
  For,     // targets in expr [if filter]: body; else_body
  Set,     // target = expr, or {% set target %}body{% endset %} (expr null)
  Macro,   // name(params = defaults): body
  Break,
  Continue,
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Branch {
  ExprPtr cond;  // null for else
  Body body;
};

struct Stmt {
  StmtKind kind = StmtKind::Text;
  int line = 0;
  std::string text;                 // Text; Macro name
  ExprPtr expr;                     // Output, For (iterable), Set (value)
  ExprPtr target;                   // Set: Name, Tuple of Names, or Attr; For: Name or Tuple
  ExprPtr filter;                   // For: the "if" condition
  std::vector<Branch> branches;     // If
  Body body;                        // For, Set (block), Macro
  Body else_body;                   // For, If
  std::vector<std::string> params;  // Macro
  std::vector<ExprPtr> defaults;    // Macro: one per param, null when none
};

}  // namespace gufo::tmpl
