// text_until_trigger_gbnf (see trigger.h).
#include "grammar/trigger.h"

#include <algorithm>
#include <vector>

#include "grammar/gbnf_text.h"

namespace gufo::grammar {

namespace {

// The KMP automaton's step: from `matched` characters of `trigger` matched, after `c`, the
// length of the longest prefix of `trigger` that the text now ends with.
size_t next_state(std::string_view trigger, size_t matched, char c) {
  const std::string seen = std::string(trigger.substr(0, matched)) + c;
  for (size_t length = std::min(seen.size(), trigger.size()); length > 0; --length) {
    if (seen.compare(seen.size() - length, length, trigger, 0, length) == 0) return length;
  }
  return 0;
}

}  // namespace

Result<std::string> text_until_trigger_gbnf(std::string_view name, std::string_view trigger, std::string_view then) {
  if (trigger.empty()) return Error{"a trigger must not be empty"};
  if (std::any_of(trigger.begin(), trigger.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    return Error{"a trigger must be ASCII"};
  }
  std::string distinct(trigger);
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  CodePoints special;
  for (char c : distinct) special.emplace_back(static_cast<uint32_t>(c), static_cast<uint32_t>(c));
  // Any code point that is no character of the trigger starts the match over.
  const std::string other = gbnf_class(complement(normalized(special)));
  const auto state = [&](size_t matched) { return std::string(name) + "-" + std::to_string(matched); };
  std::string text;
  for (size_t matched = 0; matched < trigger.size(); ++matched) {
    std::vector<std::string> alternatives = {"\"\"", other + " " + state(0)};
    for (char c : distinct) {
      const size_t next = next_state(trigger, matched, c);
      alternatives.push_back(gbnf_literal(std::string(1, c)) + " " +
                             (next == trigger.size() ? std::string(then) : state(next)));
    }
    text += state(matched) + " ::= ";
    for (size_t i = 0; i < alternatives.size(); ++i) text += (i ? " | " : "") + alternatives[i];
    text += "\n";
  }
  return text;
}

}  // namespace gufo::grammar
