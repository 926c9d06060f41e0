// link_grammars (see link.h).
#include "grammar/link.h"

namespace gufo::grammar {

namespace {

// Appends `part`'s rules and character sets to `into`; returns the index its root now has.
uint32_t append_grammar(Grammar& into, const Grammar& part, const std::string& prefix) {
  const auto rule_offset = static_cast<uint32_t>(into.rules.size());
  const auto set_offset = static_cast<uint32_t>(into.char_sets.size());
  into.char_sets.insert(into.char_sets.end(), part.char_sets.begin(), part.char_sets.end());
  for (const Rule& rule : part.rules) {
    Rule copy{.name = prefix + "/" + rule.name, .alternatives = rule.alternatives};
    for (Sequence& sequence : copy.alternatives) {
      for (Symbol& symbol : sequence) symbol.index += symbol.kind == Symbol::Kind::Rule ? rule_offset : set_offset;
    }
    into.rules.push_back(std::move(copy));
  }
  return part.root + rule_offset;
}

}  // namespace

Result<Grammar> link_grammars(std::string_view glue, const std::vector<LinkedPart>& parts, const GbnfLimits& limits) {
  // Each part is first an empty placeholder rule, so that the glue parses on its own.
  std::string text(glue);
  for (const LinkedPart& part : parts) text += "\n" + part.name + " ::= \"\"";
  GUFO_ASSIGN_OR_RETURN(Grammar linked, parse_gbnf(text, limits));
  for (const LinkedPart& part : parts) {
    uint32_t placeholder = 0;
    while (placeholder < linked.rules.size() && linked.rules[placeholder].name != part.name) ++placeholder;
    const uint32_t root = append_grammar(linked, *part.grammar, part.name);
    linked.rules[placeholder].alternatives = {{Symbol{.kind = Symbol::Kind::Rule, .index = root}}};
  }
  GUFO_RETURN_IF_ERROR(check_grammar(linked));
  return linked;
}

}  // namespace gufo::grammar
