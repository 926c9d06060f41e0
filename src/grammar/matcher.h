// Runs a Grammar over bytes: a pushdown recognizer that keeps every way the input so far can
// continue (a set of stacks; each stack's top is the code-point set to read next, and an
// empty stack means a complete match), as llama.cpp's grammar sampler does. Bytes are read as
// UTF-8: a code point is matched when its last byte comes, and a byte in the middle of one is
// allowed when some code point it could still become would match. Right recursion (x*, the
// usual list) keeps the stacks shallow: a rule that ends is popped before its last symbol is
// expanded. Copying a Matcher is how a caller tries bytes without committing to them. A
// grammar so ambiguous that it would keep more than 16,384 stacks has the byte that gets it
// there refused (NOTE(grammar) in matcher.cpp).
// Tested by tests/unit/grammar/matcher_test.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace gufo::grammar {

struct Frame {
  uint32_t rule = 0;
  uint32_t alt = 0;
  uint32_t pos = 0;  // the next symbol of rules[rule].alternatives[alt]
  auto operator<=>(const Frame&) const = default;
};
using Stack = std::vector<Frame>;

// The work of one step (a code point read), as the budget counts it: stacks made before
// duplicates are dropped and frames copied, summed over the stacks the step moved on; `over`
// when the step passed the budget (and the byte was refused for it).
struct StepCost {
  size_t stacks = 0;
  size_t frames = 0;
  bool over = false;
};

// A code point in the middle of being read: its bits so far, the continuation bytes still
// due, and the smallest code point its length may encode.
struct PendingCodePoint {
  uint32_t bits = 0;
  int due = 0;
  uint32_t least = 0;
};

class Matcher {
 public:
  // The grammar must have passed check_grammar (no left recursion).
  explicit Matcher(std::shared_ptr<const Grammar> grammar);
  // A matcher in a given state: `stacks` sorted and unique, each top a code-point set (as
  // stacks() gives them), with `pending` read of the next code point.
  Matcher(std::shared_ptr<const Grammar> grammar, std::vector<Stack> stacks, PendingCodePoint pending);

  // NOTE(grammar): how much work one step may do. Real grammars keep a handful of stacks of a
  // few frames; one that would need more (deeply ambiguous, or built to explode) has the byte
  // that takes it past these refused, rather than taking unbounded time and memory.
  static constexpr size_t kMaxStacks = size_t{1} << 14;
  static constexpr size_t kMaxFrames = size_t{1} << 22;  // summed over the stacks one step makes

  // Reads one byte if the grammar allows it here; false leaves the matcher as it was (but for
  // last_step()).
  bool accept_byte(uint8_t byte);
  // The matcher after `byte`, or none where it is refused: accept_byte() on a copy, without
  // copying stacks that a whole code point replaces. `cost`: as last_step() would say.
  std::optional<Matcher> after_byte(uint8_t byte, StepCost& cost) const;
  // Reads every byte or none: false leaves the matcher as it was.
  bool accept(std::string_view bytes);
  // Whether the input so far is a whole match (also at a code point boundary).
  bool can_end() const;
  // Whether any byte at all may come next.
  bool can_continue() const;
  // The whole state as bytes: two matchers with equal keys accept the same continuations.
  std::string key() const;
  const std::vector<Stack>& stacks() const { return stacks_; }
  PendingCodePoint pending() const { return {partial_, due_, least_}; }
  const Grammar& grammar() const { return *grammar_; }
  // What the last code point read, or tried, cost (the budget's measure).
  StepCost last_step() const { return last_step_; }

 private:
  // What `byte` makes of the code point being read; none where it is not UTF-8 or no stack can
  // take what it may become.
  std::optional<PendingCodePoint> decode(uint8_t byte) const;
  // The stacks after one code point into `next`; false if no stack takes it.
  bool advanced(uint32_t code_point, std::vector<Stack>& next, StepCost& cost) const;
  bool may_complete(uint32_t lo, uint32_t hi) const;

  std::shared_ptr<const Grammar> grammar_;
  std::vector<Stack> stacks_;
  // A code point being read: its bits so far and the continuation bytes still due.
  uint32_t partial_ = 0;
  int due_ = 0;
  uint32_t least_ = 0;  // the smallest code point its length may encode
  StepCost last_step_;
};

}  // namespace gufo::grammar
