// Parser: recursive descent over the lexer's tokens, one function per precedence level.
// Tested through tests/unit/template/template_test.cpp (precedence, tags, syntax errors).
#include "template/parser.h"

#include <cerrno>
#include <cstdlib>
#include <initializer_list>

namespace gufo::tmpl {

namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  Result<Body> parse_all() {
    GUFO_ASSIGN_OR_RETURN(Body body, parse_body({}));
    if (peek().kind != TokenKind::End) {
      // parse_body stopped at an end tag nobody opened.
      return error(peek(1), "unexpected '" + peek(1).text + "' tag");
    }
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& peek(size_t ahead = 0) const {
    const size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Operator && peek(ahead).text == op;
  }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case TokenKind::Text:
        return "text";
      case TokenKind::BlockOpen:
        return "'{%'";
      case TokenKind::BlockClose:
        return "'%}'";
      case TokenKind::VarOpen:
        return "'{{'";
      case TokenKind::VarClose:
        return "'}}'";
      case TokenKind::Name:
        return "'" + t.text + "'";
      case TokenKind::String:
        return "a string";
      case TokenKind::Integer:
      case TokenKind::Float:
        return "number " + t.text;
      case TokenKind::Operator:
        return "'" + t.text + "'";
      case TokenKind::End:
        return "the end of the template";
    }
    return "?";
  }
  static Error error(const Token& at, const std::string& message) {
    return Error{"chat template line " + std::to_string(at.line) + ": " + message};
  }
  Status expect_op(const char* op) {
    if (!is_op(op)) return error(peek(), std::string("expected '") + op + "', found " + describe(peek()));
    next();
    return ok_status();
  }
  Status expect_block_close() {
    if (peek().kind != TokenKind::BlockClose) {
      return error(peek(), "expected '%}', found " + describe(peek()));
    }
    next();
    return ok_status();
  }
  Result<std::string> expect_name(const char* what) {
    if (peek().kind != TokenKind::Name) {
      return error(peek(), std::string("expected ") + what + ", found " + describe(peek()));
    }
    return next().text;
  }

  struct DepthGuard {
    explicit DepthGuard(int& d) : depth(d) { ++depth; }
    ~DepthGuard() { --depth; }
    int& depth;
  };
  Status check_depth() const {
    if (depth_ > kMaxParseDepth) {
      return error(peek(), "nesting deeper than " + std::to_string(kMaxParseDepth) + " levels");
    }
    return ok_status();
  }

  // ---- statements ----
  bool at_tag(std::initializer_list<const char*> names) const {
    if (peek().kind != TokenKind::BlockOpen || peek(1).kind != TokenKind::Name) return false;
    for (const char* name : names) {
      if (peek(1).text == name) return true;
    }
    return false;
  }

  // Parses statements until one of `end_tags` opens (left unconsumed) or the template ends.
  Result<Body> parse_body(std::initializer_list<const char*> end_tags) {
    DepthGuard guard(depth_);
    GUFO_RETURN_IF_ERROR(check_depth());
    Body body;
    while (peek().kind != TokenKind::End) {
      if (end_tags.size() > 0 && at_tag(end_tags)) return body;
      const Token& t = peek();
      if (t.kind == TokenKind::Text) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::Text;
        stmt->line = t.line;
        stmt->text = t.text;
        body.push_back(std::move(stmt));
        next();
      } else if (t.kind == TokenKind::VarOpen) {
        next();
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::Output;
        stmt->line = t.line;
        GUFO_ASSIGN_OR_RETURN(stmt->expr, parse_expression());
        if (peek().kind != TokenKind::VarClose) {
          return error(peek(), "expected '}}', found " + describe(peek()));
        }
        next();
        body.push_back(std::move(stmt));
      } else if (t.kind == TokenKind::BlockOpen) {
        if (peek(1).kind != TokenKind::Name) return error(peek(1), "expected a tag name, found " + describe(peek(1)));
        if (is_end_tag(peek(1).text)) {
          if (end_tags.size() == 0) return error(peek(1), "unexpected '" + peek(1).text + "' tag");
          return error(peek(1), "unexpected '" + peek(1).text + "' tag, expected " + join(end_tags));
        }
        GUFO_ASSIGN_OR_RETURN(StmtPtr stmt, parse_tag());
        body.push_back(std::move(stmt));
      } else {
        return error(t, "unexpected " + describe(t));
      }
    }
    if (end_tags.size() > 0) {
      return error(peek(), "missing " + join(end_tags) + " before the end of the template");
    }
    return body;
  }

  static bool is_end_tag(const std::string& name) {
    return name == "endif" || name == "elif" || name == "else" || name == "endfor" || name == "endset" ||
           name == "endmacro" || name == "endraw" || name == "endcall" || name == "endfilter";
  }
  static std::string join(std::initializer_list<const char*> names) {
    std::string out;
    for (const char* name : names) out += (out.empty() ? "'" : " or '") + std::string(name) + "'";
    return out;
  }

  Result<StmtPtr> parse_tag() {
    next();  // {%
    const Token& name_token = next();
    const std::string& name = name_token.text;
    auto stmt = std::make_unique<Stmt>();
    stmt->line = name_token.line;
    if (name == "if") {
      stmt->kind = StmtKind::If;
      GUFO_RETURN_IF_ERROR(parse_if(*stmt));
    } else if (name == "for") {
      stmt->kind = StmtKind::For;
      GUFO_RETURN_IF_ERROR(parse_for(*stmt));
    } else if (name == "set") {
      stmt->kind = StmtKind::Set;
      GUFO_RETURN_IF_ERROR(parse_set(*stmt));
    } else if (name == "macro") {
      stmt->kind = StmtKind::Macro;
      GUFO_RETURN_IF_ERROR(parse_macro(*stmt));
    } else if (name == "break" || name == "continue") {
      stmt->kind = name == "break" ? StmtKind::Break : StmtKind::Continue;
      GUFO_RETURN_IF_ERROR(expect_block_close());
    } else {
      return error(name_token, "unsupported tag '" + name + "'");
    }
    return stmt;
  }

  // Consumes {% name %} (an end or else tag with nothing inside).
  Status consume_simple_tag(const char* name) {
    if (!at_tag({name})) return error(peek(), std::string("expected '{% ") + name + " %}'");
    next();
    next();
    return expect_block_close();
  }

  Status parse_if(Stmt& stmt) {
    Branch first;
    GUFO_ASSIGN_OR_RETURN(first.cond, parse_expression());
    GUFO_RETURN_IF_ERROR(expect_block_close());
    GUFO_ASSIGN_OR_RETURN(first.body, parse_body({"elif", "else", "endif"}));
    stmt.branches.push_back(std::move(first));
    while (at_tag({"elif"})) {
      next();
      next();
      Branch branch;
      GUFO_ASSIGN_OR_RETURN(branch.cond, parse_expression());
      GUFO_RETURN_IF_ERROR(expect_block_close());
      GUFO_ASSIGN_OR_RETURN(branch.body, parse_body({"elif", "else", "endif"}));
      stmt.branches.push_back(std::move(branch));
    }
    if (at_tag({"else"})) {
      GUFO_RETURN_IF_ERROR(consume_simple_tag("else"));
      GUFO_ASSIGN_OR_RETURN(stmt.else_body, parse_body({"endif"}));
    }
    return consume_simple_tag("endif");
  }

  // A name, or names separated by commas (a tuple target).
  Result<ExprPtr> parse_assign_target(bool allow_attr) {
    const Token& first = peek();
    GUFO_ASSIGN_OR_RETURN(std::string name, expect_name("a variable name"));
    if (allow_attr && is_op(".")) {
      next();
      GUFO_ASSIGN_OR_RETURN(std::string attr, expect_name("an attribute name"));
      auto obj = make(ExprKind::Name, first.line);
      obj->name = name;
      auto target = make(ExprKind::Attr, first.line);
      target->name = attr;
      target->children.push_back(std::move(obj));
      return target;
    }
    auto target = make(ExprKind::Name, first.line);
    target->name = name;
    if (!is_op(",")) return target;
    auto tuple = make(ExprKind::Tuple, first.line);
    tuple->children.push_back(std::move(target));
    while (is_op(",")) {
      next();
      const int line = peek().line;
      GUFO_ASSIGN_OR_RETURN(std::string more, expect_name("a variable name"));
      auto item = make(ExprKind::Name, line);
      item->name = more;
      tuple->children.push_back(std::move(item));
    }
    return tuple;
  }

  Status parse_for(Stmt& stmt) {
    GUFO_ASSIGN_OR_RETURN(stmt.target, parse_assign_target(false));
    if (!is_name("in")) return error(peek(), "expected 'in' in for loop, found " + describe(peek()));
    next();
    GUFO_ASSIGN_OR_RETURN(stmt.expr, parse_or());
    if (is_name("if")) {
      next();
      GUFO_ASSIGN_OR_RETURN(stmt.filter, parse_or());
    }
    if (is_name("recursive")) return error(peek(), "unsupported 'recursive' for loop");
    GUFO_RETURN_IF_ERROR(expect_block_close());
    GUFO_ASSIGN_OR_RETURN(stmt.body, parse_body({"else", "endfor"}));
    if (at_tag({"else"})) {
      GUFO_RETURN_IF_ERROR(consume_simple_tag("else"));
      GUFO_ASSIGN_OR_RETURN(stmt.else_body, parse_body({"endfor"}));
    }
    return consume_simple_tag("endfor");
  }

  Status parse_set(Stmt& stmt) {
    GUFO_ASSIGN_OR_RETURN(stmt.target, parse_assign_target(true));
    if (is_op("=")) {
      next();
      GUFO_ASSIGN_OR_RETURN(stmt.expr, parse_expression());
      return expect_block_close();
    }
    if (stmt.target->kind != ExprKind::Name) {
      return error(peek(), "a block {% set %} needs a single variable name");
    }
    if (peek().kind != TokenKind::BlockClose) {
      return error(peek(), "expected '=' or '%}' in set, found " + describe(peek()));
    }
    next();
    GUFO_ASSIGN_OR_RETURN(stmt.body, parse_body({"endset"}));
    return consume_simple_tag("endset");
  }

  Status parse_macro(Stmt& stmt) {
    GUFO_ASSIGN_OR_RETURN(stmt.text, expect_name("a macro name"));
    GUFO_RETURN_IF_ERROR(expect_op("("));
    while (!is_op(")")) {
      GUFO_ASSIGN_OR_RETURN(std::string param, expect_name("a parameter name"));
      for (const std::string& existing : stmt.params) {
        if (existing == param) return error(peek(), "duplicate macro parameter '" + param + "'");
      }
      stmt.params.push_back(param);
      ExprPtr default_value;
      if (is_op("=")) {
        next();
        GUFO_ASSIGN_OR_RETURN(default_value, parse_expression());
      }
      stmt.defaults.push_back(std::move(default_value));
      if (!is_op(",")) break;
      next();
    }
    GUFO_RETURN_IF_ERROR(expect_op(")"));
    GUFO_RETURN_IF_ERROR(expect_block_close());
    GUFO_ASSIGN_OR_RETURN(stmt.body, parse_body({"endmacro"}));
    return consume_simple_tag("endmacro");
  }

  // ---- expressions ----
  static ExprPtr make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  static ExprPtr make_binary(ExprKind kind, const std::string& op, ExprPtr lhs, ExprPtr rhs, int line) {
    auto e = make(kind, line);
    e->name = op;
    e->children.push_back(std::move(lhs));
    e->children.push_back(std::move(rhs));
    return e;
  }

  Result<ExprPtr> parse_expression() {
    DepthGuard guard(depth_);
    GUFO_RETURN_IF_ERROR(check_depth());
    const int line = peek().line;
    GUFO_ASSIGN_OR_RETURN(ExprPtr value, parse_or());
    if (!is_name("if")) return value;
    next();
    auto cond = make(ExprKind::Cond, line);
    GUFO_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
    cond->children.push_back(std::move(test));
    cond->children.push_back(std::move(value));
    if (is_name("else")) {
      next();
      GUFO_ASSIGN_OR_RETURN(ExprPtr other, parse_expression());
      cond->children.push_back(std::move(other));
    } else {
      cond->children.push_back(nullptr);
    }
    return cond;
  }

  Result<ExprPtr> parse_or() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_and());
    while (is_name("or")) {
      const int line = next().line;
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_and());
      lhs = make_binary(ExprKind::Or, "or", std::move(lhs), std::move(rhs), line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_and() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_not());
    while (is_name("and")) {
      const int line = next().line;
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_not());
      lhs = make_binary(ExprKind::And, "and", std::move(lhs), std::move(rhs), line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_not() {
    if (!is_name("not")) return parse_compare();
    DepthGuard guard(depth_);
    GUFO_RETURN_IF_ERROR(check_depth());
    const int line = next().line;
    GUFO_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
    auto e = make(ExprKind::Unary, line);
    e->name = "not";
    e->children.push_back(std::move(operand));
    return e;
  }

  Result<ExprPtr> parse_compare() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_math1());
    while (true) {
      std::string op;
      const Token& t = peek();
      if (t.kind == TokenKind::Operator &&
          (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")) {
        op = t.text;
        next();
      } else if (is_name("in")) {
        op = "in";
        next();
      } else if (is_name("not") && is_name("in", 1)) {
        op = "not in";
        next();
        next();
      } else {
        break;
      }
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_math1());
      lhs = make_binary(ExprKind::Binary, op, std::move(lhs), std::move(rhs), t.line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_math1() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_concat());
    while (is_op("+") || is_op("-")) {
      const Token& t = next();
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_concat());
      lhs = make_binary(ExprKind::Binary, t.text, std::move(lhs), std::move(rhs), t.line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_concat() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_math2());
    while (is_op("~")) {
      const Token& t = next();
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_math2());
      lhs = make_binary(ExprKind::Binary, "~", std::move(lhs), std::move(rhs), t.line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_math2() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_pow());
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const Token& t = next();
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_pow());
      lhs = make_binary(ExprKind::Binary, t.text, std::move(lhs), std::move(rhs), t.line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_pow() {
    GUFO_ASSIGN_OR_RETURN(ExprPtr lhs, parse_unary(true));
    while (is_op("**")) {
      const Token& t = next();
      GUFO_ASSIGN_OR_RETURN(ExprPtr rhs, parse_unary(true));
      lhs = make_binary(ExprKind::Binary, "**", std::move(lhs), std::move(rhs), t.line);
    }
    return lhs;
  }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(depth_);
    GUFO_RETURN_IF_ERROR(check_depth());
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const Token& t = next();
      GUFO_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node = make(ExprKind::Unary, t.line);
      node->name = t.text;
      node->children.push_back(std::move(operand));
    } else {
      GUFO_ASSIGN_OR_RETURN(node, parse_primary());
      GUFO_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    }
    if (with_filter) return parse_filters_and_tests(std::move(node));
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& t = next();
    switch (t.kind) {
      case TokenKind::Name: {
        auto e = make(ExprKind::Literal, t.line);
        if (t.text == "true" || t.text == "True")
          e->literal = Value::boolean(true);
        else if (t.text == "false" || t.text == "False")
          e->literal = Value::boolean(false);
        else if (t.text == "none" || t.text == "None")
          e->literal = Value::none();
        else {
          e->kind = ExprKind::Name;
          e->name = t.text;
        }
        return e;
      }
      case TokenKind::String: {
        std::string text = t.text;
        while (peek().kind == TokenKind::String) text += next().text;  // "a" "b" is "ab"
        auto e = make(ExprKind::Literal, t.line);
        e->literal = Value::string(std::move(text));
        return e;
      }
      case TokenKind::Integer: {
        errno = 0;
        char* end = nullptr;
        const long long v = std::strtoll(t.text.c_str(), &end, 10);
        if (errno == ERANGE) return error(t, "integer literal " + t.text + " is too large");
        auto e = make(ExprKind::Literal, t.line);
        e->literal = Value::integer(v);
        return e;
      }
      case TokenKind::Float: {
        auto e = make(ExprKind::Literal, t.line);
        e->literal = Value::floating(std::strtod(t.text.c_str(), nullptr));
        return e;
      }
      case TokenKind::Operator:
        if (t.text == "(") return parse_paren(t.line);
        if (t.text == "[") return parse_list(t.line);
        if (t.text == "{") return parse_dict(t.line);
        break;
      default:
        break;
    }
    return error(t, "unexpected " + describe(t) + " in expression");
  }

  Result<ExprPtr> parse_paren(int line) {
    if (is_op(")")) {
      next();
      return make(ExprKind::Tuple, line);
    }
    GUFO_ASSIGN_OR_RETURN(ExprPtr first, parse_expression());
    if (!is_op(",")) {
      GUFO_RETURN_IF_ERROR(expect_op(")"));
      return first;
    }
    auto tuple = make(ExprKind::Tuple, line);
    tuple->children.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (is_op(")")) break;
      GUFO_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
      tuple->children.push_back(std::move(item));
    }
    GUFO_RETURN_IF_ERROR(expect_op(")"));
    return tuple;
  }

  Result<ExprPtr> parse_list(int line) {
    auto list = make(ExprKind::List, line);
    while (!is_op("]")) {
      GUFO_ASSIGN_OR_RETURN(ExprPtr item, parse_expression());
      list->children.push_back(std::move(item));
      if (!is_op(",")) break;
      next();
    }
    GUFO_RETURN_IF_ERROR(expect_op("]"));
    return list;
  }

  Result<ExprPtr> parse_dict(int line) {
    auto dict = make(ExprKind::Dict, line);
    while (!is_op("}")) {
      GUFO_ASSIGN_OR_RETURN(ExprPtr key, parse_expression());
      GUFO_RETURN_IF_ERROR(expect_op(":"));
      GUFO_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
      dict->children.push_back(std::move(key));
      dict->children.push_back(std::move(value));
      if (!is_op(",")) break;
      next();
    }
    GUFO_RETURN_IF_ERROR(expect_op("}"));
    return dict;
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".")) {
        const Token& dot = next();
        const Token& t = next();
        if (t.kind == TokenKind::Name) {
          auto e = make(ExprKind::Attr, dot.line);
          e->name = t.text;
          e->children.push_back(std::move(node));
          node = std::move(e);
        } else if (t.kind == TokenKind::Integer) {
          auto index = make(ExprKind::Literal, t.line);
          index->literal = Value::integer(std::strtoll(t.text.c_str(), nullptr, 10));
          auto e = make(ExprKind::Index, dot.line);
          e->children.push_back(std::move(node));
          e->children.push_back(std::move(index));
          node = std::move(e);
        } else {
          return error(t, "expected an attribute name after '.', found " + describe(t));
        }
      } else if (is_op("[")) {
        GUFO_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
      } else if (is_op("(")) {
        const int line = next().line;
        auto call = make(ExprKind::Call, line);
        call->children.push_back(std::move(node));
        GUFO_RETURN_IF_ERROR(parse_args(*call));
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr node) {
    const int line = next().line;  // [
    ExprPtr parts[3];
    int colons = 0;
    while (true) {
      if (is_op(":")) {
        if (colons == 2) return error(peek(), "too many ':' in slice");
        ++colons;
        next();
        continue;
      }
      if (is_op("]")) break;
      if (parts[colons]) return error(peek(), "expected ']' or ':', found " + describe(peek()));
      GUFO_ASSIGN_OR_RETURN(parts[colons], parse_expression());
    }
    next();  // ]
    if (colons == 0) {
      if (!parts[0]) return error(peek(), "empty subscript '[]'");
      auto e = make(ExprKind::Index, line);
      e->children.push_back(std::move(node));
      e->children.push_back(std::move(parts[0]));
      return e;
    }
    auto e = make(ExprKind::Slice, line);
    e->children.push_back(std::move(node));
    for (ExprPtr& part : parts) e->children.push_back(std::move(part));
    return e;
  }

  // (args): positional, then name=value keyword arguments; '(' already consumed.
  Status parse_args(Expr& call) {
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) return error(peek(), "unsupported argument unpacking '" + peek().text + "'");
      if (peek().kind == TokenKind::Name && is_op("=", 1)) {
        std::string name = next().text;
        next();
        GUFO_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        call.kw_names.push_back(std::move(name));
        call.children.push_back(std::move(value));
      } else {
        if (!call.kw_names.empty()) return error(peek(), "positional argument after keyword argument");
        GUFO_ASSIGN_OR_RETURN(ExprPtr value, parse_expression());
        call.children.push_back(std::move(value));
      }
      if (!is_op(",")) break;
      next();
    }
    return expect_op(")");
  }

  Result<ExprPtr> parse_filters_and_tests(ExprPtr node) {
    while (true) {
      if (is_op("|")) {
        const int line = next().line;
        GUFO_ASSIGN_OR_RETURN(std::string name, expect_name("a filter name"));
        auto e = make(ExprKind::Filter, line);
        e->name = name;
        e->children.push_back(std::move(node));
        if (is_op("(")) {
          next();
          GUFO_RETURN_IF_ERROR(parse_args(*e));
        }
        node = std::move(e);
      } else if (is_name("is")) {
        const int line = next().line;
        auto e = make(ExprKind::Test, line);
        if (is_name("not")) {
          next();
          e->negate = true;
        }
        GUFO_ASSIGN_OR_RETURN(std::string name, expect_name("a test name"));
        e->name = name;
        e->children.push_back(std::move(node));
        if (is_op("(")) {
          next();
          GUFO_RETURN_IF_ERROR(parse_args(*e));
        } else if (test_argument_follows()) {
          GUFO_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
          GUFO_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
          e->children.push_back(std::move(arg));
        }
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  // Jinja2: `x is divisibleby 3`, `x is equalto y` take one argument without parentheses.
  bool test_argument_follows() const {
    const Token& t = peek();
    if (t.kind == TokenKind::Name) {
      return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "if" && t.text != "is" &&
             t.text != "in" && t.text != "not";
    }
    return t.kind == TokenKind::String || t.kind == TokenKind::Integer || t.kind == TokenKind::Float || is_op("[") ||
           is_op("{");
  }

  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Result<Body> parse_template(const std::vector<Token>& tokens) {
  Parser parser(tokens);
  return parser.parse_all();
}

}  // namespace gufo::tmpl
