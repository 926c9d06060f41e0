// StackTokens (see stack_tokens.h).
#include "grammar/stack_tokens.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace gufo::grammar {

namespace {

// The grammar with one more rule, the sentinel: one code-point set that holds nothing, so a
// stack that comes down to it stays, and reads nothing more.
std::shared_ptr<const Grammar> with_sentinel(const Grammar& grammar) {
  Grammar local = grammar;
  local.char_sets.push_back(CharSet{});
  const auto nothing = static_cast<uint32_t>(local.char_sets.size() - 1);
  local.rules.push_back(
      Rule{.name = "(below)", .alternatives = {{Symbol{.kind = Symbol::Kind::Chars, .index = nothing}}}});
  return std::make_shared<const Grammar>(std::move(local));
}

bool takes_every_non_ascii(const CharSet& set) {
  return set.contains_all(0x80, 0xD7FF) && set.contains_all(0xE000, 0x10FFFF);
}
bool takes_no_non_ascii(const CharSet& set) {
  return !set.intersects(0x80, 0xD7FF) && !set.intersects(0xE000, 0x10FFFF);
}

const CharSet& top_set(const Grammar& g, const Stack& stack) {
  const Frame& top = stack.back();
  return g.char_sets[g.rules[top.rule].alternatives[top.alt][top.pos].index];
}

}  // namespace

// Runs of tokens_in_order() found accepted and uncertain, and the states whose steps the walk
// relied on (for the dearest step).
struct StackTokens::Walk {
  std::vector<std::pair<uint32_t, uint32_t>> accepted;
  std::vector<std::pair<uint32_t, uint32_t>> uncertain;
  std::vector<uint32_t> relied_on;
  StepCost relied_cost;       // of steps taken for reads_to(), which keeps no list of states
  uint32_t stamp = 0;         // marks the states relied on in relied_stamp_
  bool from_boundary = true;  // the top's state has no code point half read
};

StackTokens::StackTokens(const Grammar& grammar, std::shared_ptr<const TokenTrie> trie)
    : sentinel_rule_(static_cast<uint32_t>(grammar.rules.size())),
      local_(with_sentinel(grammar)),
      trie_(std::move(trie)) {}

void StackTokens::clear() {
  states_.clear();
  escaped_.clear();
  loops_.clear();
  tops_.clear();
  boundary_.clear();
  relied_stamp_.clear();
  reads_.clear();
}

const TopTokens& StackTokens::of(const Stack& stack, PendingCodePoint pending) {
  Stack top;
  uint32_t kept = static_cast<uint32_t>(stack.size());
  if (stack.size() > kKeptFrames) {
    kept = kKeptFrames;
    top.push_back(Frame{.rule = sentinel_rule_, .alt = 0, .pos = 0});
  }
  top.insert(top.end(), stack.end() - kept, stack.end());
  const uint32_t start = states_.intern(Matcher(local_, {std::move(top)}, pending));
  if (auto it = tops_.find(start); it != tops_.end()) return it->second;
  TopTokens sets = walk(start);
  sets.kept_frames = kept;
  return tops_.emplace(start, std::move(sets)).first->second;
}

void StackTokens::grow_side_tables() {
  if (escaped_.size() < states_.size()) escaped_.resize(states_.size(), -1);
  if (loops_.size() < states_.size()) loops_.resize(states_.size());
}

bool StackTokens::escaped(uint32_t state) {
  grow_side_tables();
  if (escaped_[state] < 0) {
    const auto& stacks = states_.state(state).stacks();
    escaped_[state] = std::any_of(stacks.begin(), stacks.end(),
                                  [&](const Stack& s) { return !s.empty() && s.back().rule == sentinel_rule_; })
                          ? 1
                          : 0;
  }
  return escaped_[state] == 1;
}

uint32_t StackTokens::at_boundary(uint32_t state) {
  const Matcher& m = states_.state(state);
  if (m.pending().due == 0) return state;
  if (boundary_.size() <= state) boundary_.resize(states_.size(), -1);
  if (boundary_[state] < 0) {
    const uint32_t boundary = states_.intern(Matcher(local_, m.stacks(), PendingCodePoint{}));
    boundary_[state] = static_cast<int32_t>(boundary);  // after intern(), which may grow states_
  }
  return static_cast<uint32_t>(boundary_[state]);
}

namespace {

// Appends [begin, end) to ascending runs, joining it to the last one where they meet.
void append_run(std::vector<std::pair<uint32_t, uint32_t>>& runs, uint32_t begin, uint32_t end) {
  if (begin == end) return;
  if (!runs.empty() && runs.back().second == begin) {
    runs.back().second = end;
  } else {
    runs.emplace_back(begin, end);
  }
}

}  // namespace

TopTokens StackTokens::walk(uint32_t start) {
  const auto& nodes = trie_->nodes();
  Walk walk;
  walk.stamp = ++walks_;
  walk.from_boundary = states_.state(start).pending().due == 0;
  // Depth first in the trie's order (children pushed last first); each node is stepped into
  // from its parent's state when it is popped.
  struct Todo {
    uint32_t node;
    uint32_t parent_state;
    uint32_t depth;  // the node's
    bool escaped;    // some stack reached the sentinel on the way to the parent
  };
  std::vector<Todo> todo;
  const auto push_children = [&](uint32_t node, uint32_t state, uint32_t depth, bool escaped) {
    for (uint32_t c = nodes[node].n_children; c-- > 0;) {
      todo.push_back({nodes[node].first_child + c, state, depth + 1, escaped});
    }
  };
  relied_on(walk, start);
  // A string's inside or free text takes the whole vocabulary but for a few tokens: looked at
  // once from the root, not once per first byte.
  if (takes_all_but_a_few(walk, start, nodes[0], 0)) return sets_of(walk);
  std::vector<uint32_t> rest;  // the root's children left to walk
  take_root_runs(walk, start, rest);
  for (size_t c = rest.size(); c-- > 0;) todo.push_back({rest[c], start, 1, false});
  while (!todo.empty()) {
    const Todo at = todo.back();
    todo.pop_back();
    const TokenTrie::Node& node = nodes[at.node];
    const int32_t next = states_.step(at.parent_state, node.byte);
    if (next == ByteStates::kRefused) {
      if (at.escaped) append_run(walk.uncertain, node.first_token, node.end_token);
      continue;
    }
    const auto state = static_cast<uint32_t>(next);
    const bool escaped_here = at.escaped || escaped(state);
    const uint32_t own_end = node.first_token + node.n_tokens;
    append_run(escaped_here ? walk.uncertain : walk.accepted, node.first_token, own_end);
    if (node.n_children == 0) continue;
    if (!escaped_here && node.below != TokenTrie::kNoSummary &&
        (trie_->bytes_below(node).non_ascii ? takes_all_below(walk, state, node)
                                            : reads_whole_subtree(walk, state, node))) {
      append_run(walk.accepted, own_end, node.end_token);
      continue;
    }
    if (!escaped_here && takes_all_but_a_few(walk, state, node, at.depth)) continue;
    relied_on(walk, state);
    push_children(at.node, state, at.depth, escaped_here);
  }
  return sets_of(walk);
}

TopTokens StackTokens::sets_of(Walk& walk) {
  // The root's runs came first (take_root_runs), the walk's after, each in ascending order.
  std::sort(walk.accepted.begin(), walk.accepted.end());
  std::sort(walk.uncertain.begin(), walk.uncertain.end());
  TopTokens sets;
  sets.dearest = walk.relied_cost;
  sets.accepted = TokenSet(*trie_, walk.accepted);
  const auto& order = trie_->tokens_in_order();
  for (const auto& [begin, end] : walk.uncertain)
    sets.uncertain.insert(sets.uncertain.end(), order.begin() + begin, order.begin() + end);
  for (const uint32_t state : walk.relied_on) {
    const StepCost cost = states_.dearest_step(state);
    sets.dearest.stacks = std::max(sets.dearest.stacks, cost.stacks);
    sets.dearest.frames = std::max(sets.dearest.frames, cost.frames);
    sets.dearest.over = sets.dearest.over || cost.over;
  }
  sets.dearest.over = sets.dearest.over || states_.capped();
  return sets;
}

// The state that the most ASCII bytes lead to from `start`, where it loops on them (inside a
// string: every byte but the quote, the backslash and the controls; an email's local part:
// its atext); else -1.
int32_t StackTokens::root_loop(Walk& walk, uint32_t start) {
  if (!walk.from_boundary) return -1;
  const std::vector<AsciiBytes> groups = states_.twin_groups(start);  // a copy: steps may grow states_
  const auto size = [](const AsciiBytes& g) { return count_bits(g[0]) + count_bits(g[1]); };
  const auto most = std::max_element(groups.begin(), groups.end(),
                                     [&](const AsciiBytes& a, const AsciiBytes& b) { return size(a) < size(b); });
  // NOTE(grammar): a loop worth taking the root's runs for reads most of ASCII.
  if (most == groups.end() || size(*most) < 64) return -1;
  const auto byte =
      static_cast<uint8_t>((*most)[0] != 0 ? std::countr_zero((*most)[0]) : 64 + std::countr_zero((*most)[1]));
  const int32_t next = states_.step(start, byte);
  if (next == ByteStates::kRefused || escaped(static_cast<uint32_t>(next))) return -1;
  const int32_t looping = looping_state(walk, static_cast<uint32_t>(next));
  if (looping < 0) return -1;
  const Loop& loop = ascii_loop_of(static_cast<uint32_t>(looping));
  return (loop.ascii[byte >> 6] >> (byte & 63) & 1) != 0 ? looping : -1;
}

// Whether the root's child with `byte` leads from `start` to `looping` (an ASCII byte there; a
// lead byte to it once its code point is whole).
bool StackTokens::leads_to(Walk& walk, uint32_t start, uint8_t byte, int32_t looping) {
  const int32_t next = states_.step(start, byte);
  if (next == ByteStates::kRefused || escaped(static_cast<uint32_t>(next))) return false;
  return byte < 0x80 ? next == looping : looping_state(walk, static_cast<uint32_t>(next)) == looping;
}

// The runs of the root's children that lead from `start` into root_loop(), each taken but for
// a few tokens at once, rather than child by child; the children left for the walk go in `rest`.
void StackTokens::take_root_runs(Walk& walk, uint32_t start, std::vector<uint32_t>& rest) {
  const auto& nodes = trie_->nodes();
  const TokenTrie::Node& root = nodes[0];
  const int32_t looping = root_loop(walk, start);
  uint32_t c = 0;
  while (c < root.n_children) {
    const auto child_leads = [&](uint32_t i) {
      return looping >= 0 && leads_to(walk, start, nodes[root.first_child + i].byte, looping);
    };
    uint32_t last = c + 1;  // the run is [c, last)
    const bool leads = child_leads(c);
    while (leads && last < root.n_children && child_leads(last)) ++last;
    bool taken = false;
    if (leads) {
      const Loop loop = loop_of(static_cast<uint32_t>(looping));  // a copy: the walk may grow loops_
      taken = takes_run_but_a_few(walk, loop, looping, start, 0, nodes[root.first_child + c].first_token,
                                  nodes[root.first_child + last - 1].end_token);
    }
    for (; c < last; ++c) {
      if (!taken) rest.push_back(root.first_child + c);
    }
  }
}

// Whether the tokens below `node` (reached in `state`, no sentinel met) are ASCII that
// reads_to() shows are all read.
bool StackTokens::reads_whole_subtree(Walk& walk, uint32_t state, const TokenTrie::Node& node) {
  const BytesBelow& below = trie_->bytes_below(node);
  return reads_to(state, below.ascii, below.depth, walk.relied_cost);
}

// Notes that the walk takes steps from `state` (once a walk).
void StackTokens::relied_on(Walk& walk, uint32_t state) {
  if (relied_stamp_.size() < states_.size()) relied_stamp_.resize(states_.size(), 0);
  if (relied_stamp_[state] == walk.stamp) return;
  relied_stamp_[state] = walk.stamp;
  walk.relied_on.push_back(state);
}

// The token at `position` of tokens_in_order() read on from `state` after its first `depth`
// bytes. With `looping` (a state that loops on the ASCII bytes `loop_ascii` and on every
// non-ASCII code point) and a token that is UTF-8, what follows that state up to the next byte
// it does not loop on is skipped, not stepped: it leads back to the same state.
StackTokens::Verdict StackTokens::one_token(Walk& walk, uint32_t state, uint32_t position, uint32_t depth,
                                            int32_t looping, const AsciiBytes& loop_ascii) {
  const std::string_view bytes = trie_->bytes_at(position);
  bool escaped_here = false;
  for (size_t k = depth; k < bytes.size(); ++k) {
    if (static_cast<int32_t>(state) == looping) {
      while (k < bytes.size() && (static_cast<uint8_t>(bytes[k]) >= 0x80 ||
                                  (loop_ascii[static_cast<uint8_t>(bytes[k]) >> 6] >> (bytes[k] & 63) & 1) != 0))
        ++k;
      if (k == bytes.size()) break;
    }
    relied_on(walk, state);
    const int32_t next = states_.step(state, static_cast<uint8_t>(bytes[k]));
    if (next == ByteStates::kRefused) return escaped_here ? Verdict::Uncertain : Verdict::Refused;
    state = static_cast<uint32_t>(next);
    escaped_here = escaped_here || escaped(state);
  }
  return escaped_here ? Verdict::Uncertain : Verdict::Accepted;
}

// For a state that loops on every non-ASCII code point (a string's inside, free text): takes
// the tokens below `node` (at `depth`) but for the few that hold an ASCII byte it does not loop
// on or are not UTF-8, and those one by one. False where those are not few.
bool StackTokens::takes_all_but_a_few(Walk& walk, uint32_t state, const TokenTrie::Node& node, uint32_t depth) {
  if (!walk.from_boundary) return false;  // the tokens taken unseen are whole UTF-8 from their start
  const int32_t looping = looping_state(walk, state);
  if (looping < 0) return false;
  const Loop loop = loop_of(static_cast<uint32_t>(looping));
  if (!loop.non_ascii) return false;
  return takes_run_but_a_few(walk, loop, looping, state, depth, node.first_token + node.n_tokens, node.end_token);
}

// The tokens at [begin, end) of tokens_in_order(), read from `state` after their first `depth`
// bytes and then by a state with `loop`: all but those that hold a byte it does not loop on
// or are not UTF-8, and those one by one. False where those are not few.
bool StackTokens::takes_run_but_a_few(Walk& walk, const Loop& loop, int32_t looping, uint32_t state, uint32_t depth,
                                      uint32_t begin, uint32_t end) {
  // The first list's tokens are stepped byte by byte (not UTF-8, or not read by an ASCII loop).
  std::vector<const std::vector<uint32_t>*> lists = {loop.non_ascii ? &trie_->positions_not_utf8()
                                                                    : &trie_->positions_non_ascii()};
  for (uint32_t byte = 0; byte < 0x80; ++byte) {
    if ((loop.ascii[byte >> 6] >> (byte & 63) & 1) == 0)
      lists.push_back(&trie_->positions_with(static_cast<uint8_t>(byte)));
  }
  // NOTE(grammar): one token tried alone costs about what one trie node does; past an
  // eighth of the subtree, walking it is cheaper.
  size_t n_few = 0;
  const auto in_subtree = [&](const std::vector<uint32_t>& list) {
    return std::make_pair(std::lower_bound(list.begin(), list.end(), begin),
                          std::lower_bound(list.begin(), list.end(), end));
  };
  for (const auto* list : lists) {
    const auto [first, last] = in_subtree(*list);
    n_few += static_cast<size_t>(last - first);
  }
  if (n_few * 8 > end - begin) return false;
  // The few as bits over [begin, end), so that they come in order without a sort; the first
  // list's in a second set, which may not skip the loop's bytes.
  std::vector<uint64_t> few((end - begin + 63) / 64, 0);
  std::vector<uint64_t> stepped(few.size(), 0);
  for (size_t l = 0; l < lists.size(); ++l) {
    const auto [first, last] = in_subtree(*lists[l]);
    for (auto it = first; it != last; ++it) {
      const uint32_t i = *it - begin;
      few[i >> 6] |= uint64_t{1} << (i & 63);
      if (l == 0) stepped[i >> 6] |= uint64_t{1} << (i & 63);
    }
  }
  uint32_t next = begin;
  for (size_t w = 0; w < few.size(); ++w) {
    for (uint64_t left = few[w]; left != 0; left &= left - 1) {
      const uint32_t i = static_cast<uint32_t>(w * 64) + static_cast<uint32_t>(std::countr_zero(left));
      const uint32_t position = begin + i;
      append_run(walk.accepted, next, position);
      const bool skips = (stepped[w] >> (i & 63) & 1) == 0;
      const Verdict verdict = one_token(walk, state, position, depth, skips ? looping : -1, loop.ascii);
      if (verdict != Verdict::Refused)
        append_run(verdict == Verdict::Accepted ? walk.accepted : walk.uncertain, position, position + 1);
      next = position + 1;
    }
  }
  append_run(walk.accepted, next, end);
  return true;
}

// Whether every token below `node` (reached in `state`, no sentinel met) is read: each byte
// below keeps the state looping, and what is not ASCII is whole UTF-8 that it loops on too.
bool StackTokens::takes_all_below(Walk& walk, uint32_t state, const TokenTrie::Node& node) {
  const BytesBelow& below = trie_->bytes_below(node);
  const bool pending = states_.state(state).pending().due > 0;
  if ((pending || below.non_ascii) && !(walk.from_boundary && below.utf8)) return false;
  const int32_t looping = looping_state(walk, state);
  if (looping < 0) return false;
  const Loop loop = loop_of(static_cast<uint32_t>(looping));
  if ((below.ascii[0] & ~loop.ascii[0]) != 0 || (below.ascii[1] & ~loop.ascii[1]) != 0) return false;
  return !(pending || below.non_ascii) || loop.non_ascii;
}

// The state whose loop decides the tokens below `state`'s node: the state itself at a code
// point boundary; in the middle of one, the state after it (every non-ASCII code point leads
// to the same one where the stacks take all of them or none), where the walk started at a
// boundary (so that whole UTF-8 tokens complete the code point). -1 if there is none. Marks
// what it finds as relied on.
int32_t StackTokens::looping_state(Walk& walk, uint32_t state) {
  int32_t looping = static_cast<int32_t>(state);
  if (states_.state(state).pending().due > 0) {
    if (!walk.from_boundary) return -1;
    const uint32_t boundary = at_boundary(state);
    looping = loop_of(boundary).after_non_ascii;
    if (looping < 0) return -1;
    relied_on(walk, boundary);
  }
  relied_on(walk, static_cast<uint32_t>(looping));
  return looping;
}

const StackTokens::Loop& StackTokens::loop_of(uint32_t state) {
  grow_side_tables();
  if (loops_[state].known) return loops_[state];
  Loop loop{.known = true};
  const std::vector<Stack> stacks = states_.state(state).stacks();  // a copy: step() may grow states_
  std::vector<const CharSet*> tops;
  for (const Stack& s : stacks) {
    if (!s.empty()) tops.push_back(&top_set(*local_, s));
  }
  // NOTE(grammar): past 64 stacks the state is not looked at: a loop is a few stacks. Its
  // ASCII bytes are stepped only where it loops on every non-ASCII code point (the loops that
  // the mask takes subtrees of), so that a state met on the way makes no states it does not need.
  const bool uniform = std::all_of(
      tops.begin(), tops.end(), [](const CharSet* s) { return takes_every_non_ascii(*s) || takes_no_non_ascii(*s); });
  const bool some = std::any_of(tops.begin(), tops.end(), [](const CharSet* s) { return takes_every_non_ascii(*s); });
  if (tops.size() <= 64 && uniform && some) {
    // U+0080 (C2 80) stands for every non-ASCII code point: the same stacks read each.
    const int32_t lead = states_.step(state, 0xC2);
    if (lead != ByteStates::kRefused) {
      loop.after_non_ascii = states_.step(static_cast<uint32_t>(lead), 0x80);
      loop.non_ascii = loop.after_non_ascii == static_cast<int32_t>(state);
      states_.note_cost(state, states_.dearest_step(static_cast<uint32_t>(lead)));
    }
  }
  grow_side_tables();
  loops_[state] = loop;
  return loop.non_ascii ? ascii_loop_of(state) : loops_[state];
}

const StackTokens::Loop& StackTokens::ascii_loop_of(uint32_t state) {
  loop_of(state);
  if (loops_[state].ascii_known) return loops_[state];
  std::array<uint64_t, 2> ascii = {0, 0};
  for (uint32_t byte = 0; byte < 0x80; ++byte) {
    if (states_.step(state, static_cast<uint8_t>(byte)) == static_cast<int32_t>(state)) {
      ascii[byte >> 6] |= uint64_t{1} << (byte & 63);
    }
  }
  grow_side_tables();  // the steps may have made states
  loops_[state].ascii = ascii;
  loops_[state].ascii_known = true;
  return loops_[state];
}

}  // namespace gufo::grammar
