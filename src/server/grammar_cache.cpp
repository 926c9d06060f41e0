// compiled_grammar (see grammar_cache.h).
#include "server/grammar_cache.h"

#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "server/tool_grammar.h"

namespace gufo::server {

namespace {

// NOTE(grammar): by count and by text size (a compiled grammar takes memory in proportion to
// its text, up to GbnfLimits' megabyte).
constexpr size_t kMaxGrammars = 64;
constexpr size_t kMaxTextBytes = size_t{16} << 20;

struct Cache {
  std::mutex mutex;
  std::list<std::string> order;  // most recently used first
  size_t text_bytes = 0;         // of the keys held
  std::unordered_map<std::string, std::pair<std::shared_ptr<const grammar::Grammar>, std::list<std::string>::iterator>>
      entries;
};

Cache& cache() {
  static Cache instance;
  return instance;
}

Result<grammar::Grammar> compile(const std::string& text, GrammarSyntax syntax) {
  if (syntax == GrammarSyntax::Gbnf) return grammar::parse_gbnf(text);
  if (syntax == GrammarSyntax::ToolCalls) return compile_tool_grammar(text);
  const auto schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (schema.is_discarded()) return Error{"the schema is not valid JSON"};
  return grammar::compile_json_schema(schema);
}

}  // namespace

Result<std::shared_ptr<const grammar::Grammar>> compiled_grammar(const std::string& source, GrammarSyntax syntax) {
  // One key space for both syntaxes: a schema's text is never taken for GBNF.
  const char* kind = syntax == GrammarSyntax::Gbnf ? "g" : syntax == GrammarSyntax::JsonSchema ? "s" : "t";
  const std::string text = kind + source;
  Cache& c = cache();
  {
    std::lock_guard lock(c.mutex);
    if (auto it = c.entries.find(text); it != c.entries.end()) {
      c.order.splice(c.order.begin(), c.order, it->second.second);
      return it->second.first;
    }
  }
  // Compiled outside the lock: a slow grammar does not hold up the others.
  GUFO_ASSIGN_OR_RETURN(grammar::Grammar parsed, compile(source, syntax));
  auto compiled = std::make_shared<const grammar::Grammar>(std::move(parsed));
  std::lock_guard lock(c.mutex);
  if (c.entries.contains(text)) return c.entries.at(text).first;
  c.order.push_front(text);
  c.entries.emplace(text, std::make_pair(compiled, c.order.begin()));
  c.text_bytes += text.size();
  while (c.entries.size() > 1 && (c.entries.size() > kMaxGrammars || c.text_bytes > kMaxTextBytes)) {
    c.text_bytes -= c.order.back().size();
    c.entries.erase(c.order.back());
    c.order.pop_back();
  }
  return compiled;
}

}  // namespace gufo::server
