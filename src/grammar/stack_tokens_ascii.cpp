// StackTokens::reads_to (see stack_tokens.h): whether a boundary state reads every string of
// a set of ASCII bytes up to a length without a stack reaching the sentinel. The bytes of a
// trie subtree (its summary) and its deepest token bound what its tokens can be, so a yes
// takes the whole subtree. A depth-first search over the states the bytes lead to: bytes that
// the same stacks read lead to one state (ByteStates' twin groups), so each group is one
// lookup; a state already looked from as deep in the same query is not looked from again (it
// is proven, or on the path being proven: a loop adds nothing to prove); each state keeps the
// widest bytes and depth shown for it, so that later queries of a subset end at once. A query
// looks from at most kMaxReadVisits states and a walk's from kMaxWalkReadVisits, and a failed
// one is kept for the walk: a "no" only sends the walk into the subtree, never changes a mask.
#include <algorithm>
#include <bit>

#include "grammar/stack_tokens.h"

namespace gufo::grammar {

namespace {

void merge(StepCost& into, StepCost cost) {
  into.stacks = std::max(into.stacks, cost.stacks);
  into.frames = std::max(into.frames, cost.frames);
  into.over = into.over || cost.over;
}

bool subset(const ByteStates::AsciiBytes& a, const ByteStates::AsciiBytes& b) {
  return (a[0] & ~b[0]) == 0 && (a[1] & ~b[1]) == 0;
}

int count(const ByteStates::AsciiBytes& a) { return count_bits(a[0]) + count_bits(a[1]); }

}  // namespace

bool StackTokens::reads_to(uint32_t state, const AsciiBytes& bytes, uint32_t depth, StepCost& cost) {
  if (depth > kMaxReadDepth) return false;
  if (reads_walk_ != walks_) {
    reads_walk_ = walks_;
    walk_read_visits_ = 0;
  }
  if (walk_read_visits_ >= kMaxWalkReadVisits) return false;
  if (reads_.size() < states_.size()) reads_.resize(states_.size());
  if (failed_before(state, bytes, depth)) return false;
  ++reads_queries_;
  query_cost_ = StepCost{};
  query_seen_.clear();
  query_visits_ = 0;
  const bool shown = reads_from(state, bytes, depth);
  walk_read_visits_ += query_visits_;
  if (!shown) {
    // A query that passed the budget fails any other from its state this walk: the children
    // below ask of fewer bytes and less depth, but from states that branch as much.
    const bool over = query_visits_ > kMaxReadVisits;
    Reads& r = reads_[state];
    r.failed_bytes = over ? AsciiBytes{0, 0} : bytes;
    r.failed_depth = over ? 0 : depth;
    r.failed_walk = walks_;
    return false;
  }
  merge(cost, query_cost_);
  // Every state looked from is shown for the bytes, as deep as it was looked from.
  for (const auto& [seen, seen_depth] : query_seen_) {
    Reads& r = reads_[seen];
    if (count(bytes) * seen_depth >= count(r.bytes) * r.depth) {
      r.bytes = bytes;
      r.depth = seen_depth;
      r.cost = query_cost_;
    }
  }
  return true;
}

// Whether this walk already failed to show that `state` reads fewer bytes, or the same, to
// no more depth (or passed the budget from it): nodes across the trie reach one state and ask
// of it again. Only ever a "not shown": the subtree is walked.
bool StackTokens::failed_before(uint32_t state, const AsciiBytes& bytes, uint32_t depth) const {
  const Reads& r = reads_[state];
  return r.failed_walk == walks_ && r.failed_depth <= depth && subset(r.failed_bytes, bytes);
}

bool StackTokens::reads_from(uint32_t state, const AsciiBytes& bytes, uint32_t depth) {
  if (depth == 0) return true;
  if (states_.state(state).pending().due != 0) return false;
  if (reads_.size() < states_.size()) reads_.resize(states_.size());
  {
    Reads& r = reads_[state];
    if (depth <= r.depth && subset(bytes, r.bytes)) {
      merge(query_cost_, r.cost);
      return true;
    }
    if (r.query == reads_queries_ && r.query_depth >= depth) return true;
    r.query = reads_queries_;
    r.query_depth = depth;
  }
  if (failed_before(state, bytes, depth)) return false;
  ++reads_visits_;
  if (++query_visits_ > kMaxReadVisits) return false;
  query_seen_.emplace_back(state, depth);
  // By index: a step may grow states_ and move the groups.
  for (size_t g = 0; g < states_.twin_groups(state).size(); ++g) {
    const AsciiBytes group = states_.twin_groups(state)[g];
    const AsciiBytes read = {group[0] & bytes[0], group[1] & bytes[1]};
    if (read[0] == 0 && read[1] == 0) continue;
    const auto byte = static_cast<uint8_t>(read[0] != 0 ? std::countr_zero(read[0]) : 64 + std::countr_zero(read[1]));
    const int32_t to = states_.step(state, byte);
    if (to == ByteStates::kRefused || escaped(static_cast<uint32_t>(to))) return false;
    if (to != static_cast<int32_t>(state) && !reads_from(static_cast<uint32_t>(to), bytes, depth - 1)) return false;
  }
  merge(query_cost_, states_.dearest_step(state));
  return true;
}

}  // namespace gufo::grammar
