// Interpreter: statement execution and expression evaluation (operators follow Python; what a
// value prints as follows @huggingface/jinja, see to_output_string). Built-ins are builtins.cpp.
// Tested through tests/unit/template/template_test.cpp.
#include "template/interpreter.h"

#include <cmath>
#include <limits>

#include "template/builtins.h"
#include "template/operators.h"

namespace gufo::tmpl {

namespace {

enum class Flow { Normal, Break, Continue };

Error line_error(int line, const std::string& message) {
  return Error{"chat template line " + std::to_string(line) + ": " + message};
}

template <class T>
Result<T> at_line(Result<T> result, int line) {
  if (result.ok()) return result;
  return line_error(line, result.error().message);
}

class Interpreter {
 public:
  explicit Interpreter(const RenderLimits& limits) : limits_(limits) {}

  Result<std::string> render(const Body& body, const std::shared_ptr<Scope>& scope) {
    std::string out;
    Flow flow = Flow::Normal;
    GUFO_RETURN_IF_ERROR(exec_body(body, scope, out, flow));
    return out;
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };

  Status step(int line) {
    if (++steps_ > limits_.max_steps) {
      return line_error(line,
                        "template ran more than " + std::to_string(limits_.max_steps) + " steps (an endless loop?)");
    }
    if (depth_ > limits_.max_depth) {
      return line_error(line, "nesting or recursion deeper than " + std::to_string(limits_.max_depth));
    }
    return ok_status();
  }

  Status append(std::string& out, const std::string& text, int line) {
    if (out.size() + text.size() > limits_.max_output_bytes) {
      return line_error(line, "output larger than " + std::to_string(limits_.max_output_bytes) + " bytes");
    }
    out += text;
    return ok_status();
  }

  // ---- statements ----
  Status exec_body(const Body& body, const std::shared_ptr<Scope>& scope, std::string& out, Flow& flow) {
    for (const StmtPtr& stmt : body) {
      GUFO_RETURN_IF_ERROR(exec(*stmt, scope, out, flow));
      if (flow != Flow::Normal) return ok_status();
    }
    return ok_status();
  }

  Status exec(const Stmt& stmt, const std::shared_ptr<Scope>& scope, std::string& out, Flow& flow) {
    DepthGuard guard(depth_);
    GUFO_RETURN_IF_ERROR(step(stmt.line));
    switch (stmt.kind) {
      case StmtKind::Text:
        return append(out, stmt.text, stmt.line);
      case StmtKind::Output: {
        GUFO_ASSIGN_OR_RETURN(Value value, eval(*stmt.expr, scope));
        return append(out, to_output_string(value), stmt.line);
      }
      case StmtKind::If:
        for (const Branch& branch : stmt.branches) {
          GUFO_ASSIGN_OR_RETURN(Value cond, eval(*branch.cond, scope));
          if (cond.truthy()) return exec_body(branch.body, scope, out, flow);
        }
        return exec_body(stmt.else_body, scope, out, flow);
      case StmtKind::For:
        return exec_for(stmt, scope, out);
      case StmtKind::Set:
        return exec_set(stmt, scope);
      case StmtKind::Macro: {
        auto fn = std::make_shared<Callable>();
        fn->name = stmt.text;
        fn->macro = &stmt;
        fn->closure = scope;
        scope->vars[stmt.text] = Value::callable(std::move(fn));
        return ok_status();
      }
      case StmtKind::Break:
        flow = Flow::Break;
        return ok_status();
      case StmtKind::Continue:
        flow = Flow::Continue;
        return ok_status();
    }
    return ok_status();
  }

  Status bind_target(const Expr& target, const Value& value, Scope& scope) {
    if (target.kind == ExprKind::Name) {
      scope.vars[target.name] = value;
      return ok_status();
    }
    // A tuple of names: unpack a list.
    if (!value.is_array()) {
      return line_error(target.line, std::string("cannot unpack a ") + value.type_name() + " into " +
                                         std::to_string(target.children.size()) + " names");
    }
    if (value.items().size() != target.children.size()) {
      return line_error(target.line, "expected " + std::to_string(target.children.size()) + " values to unpack, got " +
                                         std::to_string(value.items().size()));
    }
    for (size_t i = 0; i < target.children.size(); ++i) {
      scope.vars[target.children[i]->name] = value.items()[i];
    }
    return ok_status();
  }

  Status exec_set(const Stmt& stmt, const std::shared_ptr<Scope>& scope) {
    Value value;
    if (stmt.expr) {
      GUFO_ASSIGN_OR_RETURN(value, eval(*stmt.expr, scope));
    } else {
      std::string text;
      Flow flow = Flow::Normal;
      GUFO_RETURN_IF_ERROR(exec_body(stmt.body, scope, text, flow));
      value = Value::string(std::move(text));
    }
    const Expr& target = *stmt.target;
    if (target.kind == ExprKind::Attr) {
      GUFO_ASSIGN_OR_RETURN(Value object, eval(*target.children[0], scope));
      if (!object.is_namespace()) {
        return line_error(stmt.line, "cannot set attribute '" + target.name + "' of a " + object.type_name() +
                                         " (only of a namespace())");
      }
      GUFO_RETURN_IF_ERROR(check_storable(value, stmt.line));
      GUFO_ASSIGN_OR_RETURN(value, checked_depth(std::move(value), stmt.line));
      object.fields().set(target.name, std::move(value));
      return ok_status();
    }
    return bind_target(target, value, *scope);
  }

  Result<std::vector<Value>> iterable_items(const Value& value, int line) {
    switch (value.kind()) {
      case Kind::Array:
        return value.items();
      case Kind::Object: {
        std::vector<Value> keys;
        for (const auto& entry : value.fields().entries()) keys.push_back(Value::string(entry.first));
        return keys;
      }
      case Kind::String: {
        std::vector<Value> chars;
        for (std::string_view cp : split_code_points(value.as_string()))
          chars.push_back(Value::string(std::string(cp)));
        return chars;
      }
      case Kind::Undefined:
        return std::vector<Value>{};
      default:
        return line_error(line, std::string("cannot loop over a ") + value.type_name());
    }
  }

  Status exec_for(const Stmt& stmt, const std::shared_ptr<Scope>& scope, std::string& out) {
    GUFO_ASSIGN_OR_RETURN(Value iterable, eval(*stmt.expr, scope));
    GUFO_ASSIGN_OR_RETURN(std::vector<Value> candidates, iterable_items(iterable, stmt.line));
    auto loop_scope = std::make_shared<Scope>();
    loop_scope->parent = scope;
    std::vector<Value> items;
    if (stmt.filter) {
      for (const Value& item : candidates) {
        GUFO_RETURN_IF_ERROR(bind_target(*stmt.target, item, *loop_scope));
        GUFO_ASSIGN_OR_RETURN(Value keep, eval(*stmt.filter, loop_scope));
        if (keep.truthy()) items.push_back(item);
      }
    } else {
      items = std::move(candidates);
    }
    const int64_t n = static_cast<int64_t>(items.size());
    bool iterated = false;
    for (int64_t i = 0; i < n; ++i) {
      GUFO_RETURN_IF_ERROR(step(stmt.line));
      Value loop = Value::object();
      ObjectData& fields = loop.fields();
      fields.reserve(9);
      fields.set("index", Value::integer(i + 1));
      fields.set("index0", Value::integer(i));
      fields.set("revindex", Value::integer(n - i));
      fields.set("revindex0", Value::integer(n - i - 1));
      fields.set("first", Value::boolean(i == 0));
      fields.set("last", Value::boolean(i == n - 1));
      fields.set("length", Value::integer(n));
      fields.set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value());
      fields.set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value());
      loop_scope->vars["loop"] = loop;
      GUFO_RETURN_IF_ERROR(bind_target(*stmt.target, items[static_cast<size_t>(i)], *loop_scope));
      Flow flow = Flow::Normal;
      GUFO_RETURN_IF_ERROR(exec_body(stmt.body, loop_scope, out, flow));
      iterated = true;
      if (flow == Flow::Break) break;
    }
    if (!iterated) {
      Flow flow = Flow::Normal;
      GUFO_RETURN_IF_ERROR(exec_body(stmt.else_body, loop_scope, out, flow));
    }
    return ok_status();
  }

  // ---- expressions ----
  Result<Value> eval(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    DepthGuard guard(depth_);
    GUFO_RETURN_IF_ERROR(step(expr.line));
    switch (expr.kind) {
      case ExprKind::Literal:
        return expr.literal;
      case ExprKind::Name: {
        const Value* value = scope->lookup(expr.name);
        return value != nullptr ? *value : Value();
      }
      case ExprKind::List:
      case ExprKind::Tuple: {
        std::vector<Value> items;
        for (const ExprPtr& child : expr.children) {
          GUFO_ASSIGN_OR_RETURN(Value item, eval(*child, scope));
          GUFO_RETURN_IF_ERROR(check_storable(item, expr.line));
          items.push_back(std::move(item));
        }
        return checked_depth(Value::array(std::move(items)), expr.line);
      }
      case ExprKind::Dict: {
        GUFO_ASSIGN_OR_RETURN(Value dict, eval_dict(expr, scope));
        return checked_depth(std::move(dict), expr.line);
      }
      case ExprKind::Attr:
        return eval_attr(expr, scope);
      case ExprKind::Index:
        return eval_index(expr, scope);
      case ExprKind::Slice:
        return eval_slice(expr, scope);
      case ExprKind::Call: {
        GUFO_ASSIGN_OR_RETURN(Value result, eval_call(expr, scope));
        return checked_depth(std::move(result), expr.line);
      }
      case ExprKind::Filter: {
        GUFO_ASSIGN_OR_RETURN(Value result, eval_filter(expr, scope));
        return checked_depth(std::move(result), expr.line);
      }
      case ExprKind::Test:
        return eval_test(expr, scope);
      case ExprKind::Unary:
        return eval_unary(expr, scope);
      case ExprKind::Binary: {
        GUFO_ASSIGN_OR_RETURN(Value lhs, eval(*expr.children[0], scope));
        GUFO_ASSIGN_OR_RETURN(Value rhs, eval(*expr.children[1], scope));
        return at_line(binary_op(expr.name, lhs, rhs), expr.line);
      }
      case ExprKind::And: {
        GUFO_ASSIGN_OR_RETURN(Value lhs, eval(*expr.children[0], scope));
        if (!lhs.truthy()) return lhs;
        return eval(*expr.children[1], scope);
      }
      case ExprKind::Or: {
        GUFO_ASSIGN_OR_RETURN(Value lhs, eval(*expr.children[0], scope));
        if (lhs.truthy()) return lhs;
        return eval(*expr.children[1], scope);
      }
      case ExprKind::Cond: {
        GUFO_ASSIGN_OR_RETURN(Value cond, eval(*expr.children[0], scope));
        if (cond.truthy()) return eval(*expr.children[1], scope);
        if (!expr.children[2]) return Value();
        return eval(*expr.children[2], scope);
      }
    }
    return Value();
  }

  // Namespaces stay out of lists, dicts and other namespaces: with them out, no value can
  // form a cycle, and the depth each container records at construction stays exact.
  static Status check_storable(const Value& value, int line) {
    if (value.is_namespace()) {
      return line_error(line, "a namespace() cannot be stored in a list, dict or namespace");
    }
    return ok_status();
  }

  static Result<Value> checked_depth(Value value, int line) {
    if (value.depth() > kMaxValueDepth) {
      return line_error(line, "value nested deeper than " + std::to_string(kMaxValueDepth) + " levels");
    }
    return value;
  }

  Result<Value> eval_dict(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    Value dict = Value::object();
    for (size_t i = 0; i + 1 < expr.children.size(); i += 2) {
      GUFO_ASSIGN_OR_RETURN(Value key, eval(*expr.children[i], scope));
      if (!key.is_string()) {
        return line_error(expr.line, std::string("dict keys must be strings, got a ") + key.type_name());
      }
      GUFO_ASSIGN_OR_RETURN(Value value, eval(*expr.children[i + 1], scope));
      GUFO_RETURN_IF_ERROR(check_storable(value, expr.line));
      dict.fields().set(key.as_string(), std::move(value));
    }
    return dict;
  }

  static Value get_attribute(const Value& object, const std::string& name) {
    if (object.is_mapping_like()) {
      const Value* found = object.fields().find(name);
      return found != nullptr ? *found : Value();
    }
    return Value();
  }

  Result<Value> eval_attr(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    GUFO_ASSIGN_OR_RETURN(Value object, eval(*expr.children[0], scope));
    return get_attribute(object, expr.name);
  }

  Result<Value> eval_index(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    GUFO_ASSIGN_OR_RETURN(Value object, eval(*expr.children[0], scope));
    GUFO_ASSIGN_OR_RETURN(Value key, eval(*expr.children[1], scope));
    if (object.is_mapping_like()) {
      if (!key.is_string()) return Value();
      return get_attribute(object, key.as_string());
    }
    if (object.is_array() || object.is_string()) {
      if (!key.is_int()) {
        if (key.is_string()) return Value();  // no attributes on lists or strings
        return line_error(expr.line, std::string("indices must be integers, not ") + key.type_name());
      }
      if (object.is_array()) {
        const auto& items = object.items();
        const int64_t n = static_cast<int64_t>(items.size());
        int64_t i = key.as_int();
        if (i < 0) i += n;
        if (i < 0 || i >= n) return Value();
        return items[static_cast<size_t>(i)];
      }
      const std::vector<std::string_view> cps = split_code_points(object.as_string());
      const int64_t n = static_cast<int64_t>(cps.size());
      int64_t i = key.as_int();
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value();
      return Value::string(std::string(cps[static_cast<size_t>(i)]));
    }
    return Value();  // undefined, none, numbers: Jinja2's getitem fails softly to undefined
  }

  Result<Value> eval_slice(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    GUFO_ASSIGN_OR_RETURN(Value object, eval(*expr.children[0], scope));
    std::optional<int64_t> parts[3];
    for (int k = 0; k < 3; ++k) {
      const ExprPtr& part = expr.children[static_cast<size_t>(k) + 1];
      if (!part) continue;
      GUFO_ASSIGN_OR_RETURN(Value v, eval(*part, scope));
      if (v.is_none() || v.is_undefined()) continue;
      if (!v.is_int())
        return line_error(expr.line, std::string("slice indices must be integers, not ") + v.type_name());
      parts[k] = v.as_int();
    }
    return at_line(slice_value(object, parts[0], parts[1], parts[2]), expr.line);
  }

  Result<CallArgs> eval_args(const Expr& expr, size_t first, const std::shared_ptr<Scope>& scope) {
    CallArgs args;
    const size_t n_keyword = expr.kw_names.size();
    const size_t n_positional = expr.children.size() - first - n_keyword;
    for (size_t i = 0; i < n_positional; ++i) {
      GUFO_ASSIGN_OR_RETURN(Value v, eval(*expr.children[first + i], scope));
      args.positional.push_back(std::move(v));
    }
    for (size_t i = 0; i < n_keyword; ++i) {
      GUFO_ASSIGN_OR_RETURN(Value v, eval(*expr.children[first + n_positional + i], scope));
      args.keyword.emplace_back(expr.kw_names[i], std::move(v));
    }
    return args;
  }

  Result<Value> eval_call(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    const Expr& callee = *expr.children[0];
    if (callee.kind == ExprKind::Attr) {
      // A method call: s.startswith('x'), d.get('k'), or a callable stored in a dict.
      GUFO_ASSIGN_OR_RETURN(Value object, eval(*callee.children[0], scope));
      GUFO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, scope));
      if (object.is_mapping_like()) {
        const Value* field = object.fields().find(callee.name);
        if (field != nullptr && field->is_callable()) return call(*field, args, expr.line);
      }
      if (object.is_undefined()) {
        return line_error(expr.line, "cannot call method '" + callee.name + "' of an undefined value");
      }
      return at_line(call_method(object, callee.name, args), expr.line);
    }
    GUFO_ASSIGN_OR_RETURN(Value fn, eval(callee, scope));
    GUFO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, scope));
    if (!fn.is_callable()) {
      const std::string what = callee.kind == ExprKind::Name ? "'" + callee.name + "'" : "the value";
      if (fn.is_undefined()) return line_error(expr.line, "unknown function " + what);
      return line_error(expr.line, what + " is a " + fn.type_name() + ", not a function");
    }
    return call(fn, args, expr.line);
  }

  Result<Value> call(const Value& fn, const CallArgs& args, int line) {
    const Callable& callable = *fn.fn();
    if (callable.builtin) return at_line(callable.builtin(args), line);
    return call_macro(callable, args, line);
  }

  Result<Value> call_macro(const Callable& callable, const CallArgs& args, int line) {
    const Stmt& macro = *callable.macro;
    std::shared_ptr<Scope> closure = callable.closure.lock();
    if (!closure) return line_error(line, "macro '" + callable.name + "' called outside its scope");
    if (macro_depth_ >= limits_.max_macro_depth) {
      return line_error(line, "macro recursion deeper than " + std::to_string(limits_.max_macro_depth));
    }
    if (args.positional.size() > macro.params.size()) {
      return line_error(line, "macro '" + callable.name + "' takes " + std::to_string(macro.params.size()) +
                                  " arguments, got " + std::to_string(args.positional.size()));
    }
    auto call_scope = std::make_shared<Scope>();
    call_scope->parent = closure;
    std::vector<bool> bound(macro.params.size(), false);
    for (size_t i = 0; i < args.positional.size(); ++i) {
      call_scope->vars[macro.params[i]] = args.positional[i];
      bound[i] = true;
    }
    for (const auto& [key, value] : args.keyword) {
      size_t index = macro.params.size();
      for (size_t i = 0; i < macro.params.size(); ++i) {
        if (macro.params[i] == key) index = i;
      }
      if (index == macro.params.size()) {
        return line_error(line, "macro '" + callable.name + "' has no parameter '" + key + "'");
      }
      call_scope->vars[key] = value;
      bound[index] = true;
    }
    for (size_t i = 0; i < macro.params.size(); ++i) {
      if (bound[i]) continue;
      if (macro.defaults[i]) {
        GUFO_ASSIGN_OR_RETURN(Value v, eval(*macro.defaults[i], call_scope));
        call_scope->vars[macro.params[i]] = std::move(v);
      } else {
        call_scope->vars[macro.params[i]] = Value();
      }
    }
    ++macro_depth_;
    std::string out;
    Flow flow = Flow::Normal;
    Status status = exec_body(macro.body, call_scope, out, flow);
    --macro_depth_;
    GUFO_RETURN_IF_ERROR(status);
    return Value::string(std::move(out));
  }

  Result<Value> eval_filter(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    GUFO_ASSIGN_OR_RETURN(Value operand, eval(*expr.children[0], scope));
    GUFO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, scope));
    return at_line(apply_filter(expr.name, operand, args), expr.line);
  }

  Result<Value> eval_test(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    GUFO_ASSIGN_OR_RETURN(Value operand, eval(*expr.children[0], scope));
    GUFO_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1, scope));
    GUFO_ASSIGN_OR_RETURN(bool result, at_line(apply_test(expr.name, operand, args), expr.line));
    return Value::boolean(expr.negate ? !result : result);
  }

  Result<Value> eval_unary(const Expr& expr, const std::shared_ptr<Scope>& scope) {
    GUFO_ASSIGN_OR_RETURN(Value operand, eval(*expr.children[0], scope));
    if (expr.name == "not") return Value::boolean(!operand.truthy());
    return at_line(unary_op(expr.name, operand), expr.line);
  }

  const RenderLimits& limits_;
  int64_t steps_ = 0;
  int depth_ = 0;
  int macro_depth_ = 0;
};

}  // namespace

Result<std::string> render_body(const Body& body, const std::shared_ptr<Scope>& globals, const RenderLimits& limits) {
  Interpreter interpreter(limits);
  return interpreter.render(body, globals);
}

}  // namespace gufo::tmpl
