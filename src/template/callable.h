// What calls need: variable scopes, call arguments, and Callable (a {% macro %} or a built-in
// global such as range() or namespace()). Shared by the interpreter and the built-ins.
// Tested through tests/unit/template/template_test.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/result.h"
#include "template/value.h"

namespace gufo::tmpl {

struct Stmt;

// One level of variables: the globals, a for loop's body, a macro call.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;

  const Value* lookup(const std::string& name) const {
    for (const Scope* s = this; s != nullptr; s = s->parent.get()) {
      auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // The argument at `index`, else the keyword `name`, else null.
  const Value* get(size_t index, const char* name) const {
    if (index < positional.size()) return &positional[index];
    for (const auto& [key, value] : keyword) {
      if (key == name) return &value;
    }
    return nullptr;
  }
};

using BuiltinFunction = std::function<Result<Value>(const CallArgs&)>;

struct Callable {
  std::string name;
  BuiltinFunction builtin;       // set for built-in globals
  const Stmt* macro = nullptr;   // set for {% macro %}; owned by the parsed template
  std::weak_ptr<Scope> closure;  // the scope the macro was defined in (weak: no cycles)
};

}  // namespace gufo::tmpl
