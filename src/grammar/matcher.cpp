// Matcher (see matcher.h).
#include "grammar/matcher.h"

#include <algorithm>
#include <utility>

namespace gufo::grammar {

namespace {

// NOTE(grammar): how many ways to go on a grammar may keep at once. Real grammars keep a
// handful; one that needs more (deeply ambiguous, or built to explode) has the byte that
// would take it past this refused, rather than taking unbounded time and memory.
constexpr size_t kMaxStacks = size_t{1} << 14;

// Moves `stack` on until its top is a code-point set or it is empty, appending the results
// to `out`: ended rules are popped, and a rule symbol becomes one stack per alternative. No
// left recursion (check_grammar) means this always ends.
void expand(const Grammar& g, Stack stack, std::vector<Stack>& out) {
  for (;;) {
    if (out.size() > kMaxStacks) return;  // the caller refuses the byte
    while (!stack.empty()) {
      const Frame& top = stack.back();
      if (top.pos < g.rules[top.rule].alternatives[top.alt].size()) break;
      stack.pop_back();
    }
    if (stack.empty()) {
      out.push_back(std::move(stack));
      return;
    }
    const Frame top = stack.back();
    const Symbol symbol = g.rules[top.rule].alternatives[top.alt][top.pos];
    if (symbol.kind == Symbol::Kind::Chars) {
      out.push_back(std::move(stack));
      return;
    }
    // Continue after the rule once it is matched; a frame with nothing left goes now, so
    // that x* stays one frame deep however long the list.
    ++stack.back().pos;
    if (stack.back().pos == g.rules[top.rule].alternatives[top.alt].size()) stack.pop_back();
    const auto& alternatives = g.rules[symbol.index].alternatives;
    for (uint32_t a = 1; a < alternatives.size(); ++a) {
      Stack branch = stack;
      branch.push_back(Frame{.rule = symbol.index, .alt = a, .pos = 0});
      expand(g, std::move(branch), out);
    }
    if (alternatives.empty()) return;  // a rule with no alternatives matches nothing
    stack.push_back(Frame{.rule = symbol.index, .alt = 0, .pos = 0});
  }
}

void deduplicate(std::vector<Stack>& stacks) {
  std::sort(stacks.begin(), stacks.end());
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
}

const CharSet& next_set(const Grammar& g, const Stack& stack) {
  const Frame& top = stack.back();
  return g.char_sets[g.rules[top.rule].alternatives[top.alt][top.pos].index];
}

}  // namespace

Matcher::Matcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  const Grammar& g = *grammar_;
  for (uint32_t a = 0; a < g.rules[g.root].alternatives.size() && stacks_.size() <= kMaxStacks; ++a) {
    expand(g, Stack{Frame{.rule = g.root, .alt = a, .pos = 0}}, stacks_);
  }
  if (stacks_.size() > kMaxStacks) stacks_.clear();  // nothing can be read (NOTE(grammar))
  deduplicate(stacks_);
}

bool Matcher::advance(uint32_t code_point) {
  const Grammar& g = *grammar_;
  std::vector<Stack> next;
  for (const Stack& stack : stacks_) {
    if (stack.empty() || !next_set(g, stack).contains(code_point)) continue;
    Stack moved = stack;
    ++moved.back().pos;
    expand(g, std::move(moved), next);
    if (next.size() > kMaxStacks) return false;
  }
  deduplicate(next);
  if (next.empty()) return false;
  stacks_ = std::move(next);
  return true;
}

bool Matcher::may_complete(uint32_t lo, uint32_t hi) const {
  return std::any_of(stacks_.begin(), stacks_.end(), [&](const Stack& stack) {
    return !stack.empty() && next_set(*grammar_, stack).intersects(lo, hi);
  });
}

bool Matcher::accept_byte(uint8_t byte) {
  uint32_t partial = partial_;
  int due = due_;
  uint32_t least = least_;
  if (due > 0) {
    if ((byte & 0xC0) != 0x80) return false;
    partial = (partial << 6) | (byte & 0x3Fu);
    --due;
  } else if (byte < 0x80) {
    partial = byte;
    least = 0;
  } else if ((byte & 0xE0) == 0xC0 && byte >= 0xC2) {
    partial = byte & 0x1Fu;
    due = 1;
    least = 0x80;
  } else if ((byte & 0xF0) == 0xE0) {
    partial = byte & 0x0Fu;
    due = 2;
    least = 0x800;
  } else if ((byte & 0xF8) == 0xF0 && byte <= 0xF4) {
    partial = byte & 0x07u;
    due = 3;
    least = 0x10000;
  } else {
    return false;  // not UTF-8
  }
  if (due > 0) {
    // Some code point this can still become must be allowed next (a sequence of n bytes
    // never encodes what fewer bytes could: that bounds it from below).
    const uint32_t lo = std::max(partial << (6 * due), least);
    const uint32_t hi = std::min((partial << (6 * due)) | ((1u << (6 * due)) - 1), 0x10FFFFu);
    if (lo > hi || !may_complete(lo, hi)) return false;
    partial_ = partial;
    due_ = due;
    least_ = least;
    return true;
  }
  if (partial < least || partial > 0x10FFFF || (partial >= 0xD800 && partial <= 0xDFFF)) return false;
  if (!advance(partial)) return false;
  partial_ = 0;
  due_ = 0;
  least_ = 0;  // between code points the state is the stacks alone (key())
  return true;
}

bool Matcher::accept(std::string_view bytes) {
  Matcher trial = *this;
  for (const char c : bytes) {
    if (!trial.accept_byte(static_cast<uint8_t>(c))) return false;
  }
  *this = std::move(trial);
  return true;
}

bool Matcher::can_end() const {
  return due_ == 0 && std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

std::string Matcher::key() const {
  std::string out;
  const auto put = [&out](uint32_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof(v)); };
  // NOTE(grammar): in the middle of a code point, what is still to come only matters through
  // which stacks can take it. Where each stack takes all of its possible completions or none
  // (inside a JSON string, any non-ASCII code point), the bits read so far are left out:
  // otherwise every CJK lead and middle byte of a vocabulary would make a state of its own.
  // Only where every completion is a valid code point, too (no overlong form, no surrogate,
  // nothing past U+10FFFF): then no later byte is refused for the bits left out.
  bool uniform = due_ > 0;
  uint32_t lo = 0;
  uint32_t hi = 0;
  if (due_ > 0) {
    lo = partial_ << (6 * due_);
    hi = lo | ((1u << (6 * due_)) - 1);
    uniform = lo >= least_ && hi <= 0x10FFFF && (hi < 0xD800 || lo > 0xDFFF);
    for (const Stack& stack : stacks_) {
      if (stack.empty()) continue;
      const CharSet& set = next_set(*grammar_, stack);
      uniform = uniform && (set.contains_all(lo, hi) || !set.intersects(lo, hi));
    }
  }
  put(uniform ? 0xFFFFFFFFu : partial_);
  put(static_cast<uint32_t>(due_));
  put(uniform ? 0u : least_);
  for (const Stack& stack : stacks_) {  // sorted and unique (deduplicate)
    if (uniform) put(!stack.empty() && next_set(*grammar_, stack).contains_all(lo, hi) ? 1u : 0u);
    put(static_cast<uint32_t>(stack.size()));
    for (const Frame& f : stack) {
      put(f.rule);
      put(f.alt);
      put(f.pos);
    }
  }
  return out;
}

bool Matcher::can_continue() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return !s.empty(); });
}

}  // namespace gufo::grammar
