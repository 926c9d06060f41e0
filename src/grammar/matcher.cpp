// Matcher (see matcher.h).
#include "grammar/matcher.h"

#include <algorithm>
#include <optional>
#include <utility>

namespace gufo::grammar {

namespace {

constexpr size_t kMaxStacks = Matcher::kMaxStacks;
constexpr size_t kMaxFrames = Matcher::kMaxFrames;

// Moves `start` on until each resulting stack's top is a code-point set or it is empty,
// appending them to `out`: ended rules are popped, and a rule symbol becomes one stack per
// alternative. A worklist, not recursion (a chain of rules may be long). No left recursion
// (check_grammar) means it always ends; false when it outgrew the budget (`frames` counts the
// frames made so far).
bool expand(const Grammar& g, Stack start, std::vector<Stack>& out, size_t& frames) {
  std::vector<Stack> work = {std::move(start)};
  while (!work.empty()) {
    Stack stack = std::move(work.back());
    work.pop_back();
    while (!stack.empty()) {
      const Frame& top = stack.back();
      if (top.pos < g.rules[top.rule].alternatives[top.alt].size()) break;
      stack.pop_back();
    }
    if (stack.empty() ||
        g.rules[stack.back().rule].alternatives[stack.back().alt][stack.back().pos].kind == Symbol::Kind::Chars) {
      frames += stack.size();
      out.push_back(std::move(stack));
      if (out.size() > kMaxStacks || frames > kMaxFrames) return false;
      continue;
    }
    const Frame top = stack.back();
    const uint32_t rule = g.rules[top.rule].alternatives[top.alt][top.pos].index;
    // Continue after the rule once it is matched; a frame with nothing left goes now, so
    // that x* stays one frame deep however long the list.
    ++stack.back().pos;
    if (stack.back().pos == g.rules[top.rule].alternatives[top.alt].size()) stack.pop_back();
    const auto& alternatives = g.rules[rule].alternatives;  // none: this stack matches nothing
    for (size_t a = alternatives.size(); a-- > 0;) {        // pushed last first: popped in order
      // a == 0 is the loop's last turn: the stack is moved only after its last use.
      frames += stack.size() + 1;  // NOLINT(bugprone-use-after-move)
      if (frames > kMaxFrames || work.size() > kMaxStacks) return false;
      Stack branch = a == 0 ? std::move(stack) : stack;  // NOLINT(bugprone-use-after-move)
      branch.push_back(Frame{.rule = rule, .alt = static_cast<uint32_t>(a), .pos = 0});
      work.push_back(std::move(branch));
    }
  }
  return true;
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
  size_t frames = 0;
  bool within = true;
  for (uint32_t a = 0; a < g.rules[g.root].alternatives.size() && within; ++a) {
    within = expand(g, Stack{Frame{.rule = g.root, .alt = a, .pos = 0}}, stacks_, frames);
  }
  if (!within) stacks_.clear();  // nothing can be read (NOTE(grammar))
  deduplicate(stacks_);
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar, std::vector<Stack> stacks, PendingCodePoint pending)
    : grammar_(std::move(grammar)),
      stacks_(std::move(stacks)),
      partial_(pending.bits),
      due_(pending.due),
      least_(pending.least) {}

bool Matcher::advanced(uint32_t code_point, std::vector<Stack>& next, StepCost& cost) const {
  const Grammar& g = *grammar_;
  size_t frames = 0;
  for (const Stack& stack : stacks_) {
    if (stack.empty() || !next_set(g, stack).contains(code_point)) continue;
    Stack moved = stack;
    ++moved.back().pos;
    if (!expand(g, std::move(moved), next, frames)) {
      cost = StepCost{.stacks = next.size(), .frames = frames, .over = true};
      return false;
    }
  }
  cost = StepCost{.stacks = next.size(), .frames = frames, .over = false};
  deduplicate(next);
  return !next.empty();
}

bool Matcher::may_complete(uint32_t lo, uint32_t hi) const {
  return std::any_of(stacks_.begin(), stacks_.end(), [&](const Stack& stack) {
    return !stack.empty() && next_set(*grammar_, stack).intersects(lo, hi);
  });
}

std::optional<PendingCodePoint> Matcher::decode(uint8_t byte) const {
  uint32_t partial = partial_;
  int due = due_;
  uint32_t least = least_;
  if (due > 0) {
    if ((byte & 0xC0) != 0x80) return std::nullopt;
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
    return std::nullopt;  // not UTF-8
  }
  if (due > 0) {
    // Some code point this can still become must be allowed next (a sequence of n bytes
    // never encodes what fewer bytes could: that bounds it from below).
    const uint32_t lo = std::max(partial << (6 * due), least);
    const uint32_t hi = std::min((partial << (6 * due)) | ((1u << (6 * due)) - 1), 0x10FFFFu);
    const bool only_surrogates = lo >= 0xD800 && hi <= 0xDFFF;  // ED A0..BF: never a code point
    if (lo > hi || only_surrogates || !may_complete(lo, hi)) return std::nullopt;
  } else if (partial < least || partial > 0x10FFFF || (partial >= 0xD800 && partial <= 0xDFFF)) {
    return std::nullopt;
  }
  return PendingCodePoint{.bits = partial, .due = due, .least = least};
}

bool Matcher::accept_byte(uint8_t byte) {
  last_step_ = StepCost{};  // a byte that completes no code point costs nothing
  const std::optional<PendingCodePoint> read = decode(byte);
  if (!read) return false;
  if (read->due == 0) {
    std::vector<Stack> next;
    if (!advanced(read->bits, next, last_step_)) return false;
    stacks_ = std::move(next);
  }
  // Between code points the state is the stacks alone (key()).
  partial_ = read->due > 0 ? read->bits : 0;
  due_ = read->due;
  least_ = read->due > 0 ? read->least : 0;
  return true;
}

std::optional<Matcher> Matcher::after_byte(uint8_t byte, StepCost& cost) const {
  cost = StepCost{};
  const std::optional<PendingCodePoint> read = decode(byte);
  if (!read) return std::nullopt;
  if (read->due > 0) return Matcher(grammar_, stacks_, *read);
  std::vector<Stack> next;
  if (!advanced(read->bits, next, cost)) return std::nullopt;
  return Matcher(grammar_, std::move(next), PendingCodePoint{});
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
