// The tokens one matcher stack allows whatever lies below its top frames, computed once per
// stack top and shared by every state that holds it (xgrammar's "adaptive token mask
// cache", keyed by the top kKeptFrames frames rather than by one grammar position, so that a
// JSON string's top holds its closing quote and what follows: only tokens that run past that
// depend on what is below). The top is matched alone over the trie, with a sentinel frame
// below that matches nothing: a token it reads without reaching the sentinel is accepted
// whatever lies below; one it refuses without reaching it is refused; one that reached it on
// the way is uncertain, for the caller to try on the whole state. Subtrees whose bytes all
// keep a looping state where it is (the inside of a string, free text) are taken whole, from
// the trie's byte summaries, or whole but for the few tokens that hold a byte the loop does
// not take (the trie's byte index), those tried one by one; where the top's first byte leads
// into such a loop, the root's children are taken so in runs. A subtree of ASCII bytes alone
// is taken whole, too, where every string of its bytes as long as its tokens is read without
// leaving the top, as where a bounded repetition counts down (`[a-z0-9-]{0,61}`: no state
// loops; stack_tokens_ascii.cpp). Each top keeps the dearest step of its walk, so that the
// caller can tell that the whole state, walked token by token, would stay within the matcher's
// budget (and otherwise fall back to the reference).
// Tested by tests/unit/grammar/mask_oracle_test.cpp (against the reference walk).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "grammar/byte_states.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_set.h"
#include "grammar/token_trie.h"

namespace gufo::grammar {

struct TopTokens {
  TokenSet accepted;
  std::vector<int32_t> uncertain;  // to try on the whole state
  StepCost dearest;                // the dearest step of the walk; over: it passed a bound
  uint32_t kept_frames = 0;        // how many of the stack's frames the top is
};

class StackTokens {
 public:
  StackTokens(const Grammar& grammar, std::shared_ptr<const TokenTrie> trie);

  // The sets of `stack` (non-empty, its top a code-point set) in a state with `pending` read.
  const TopTokens& of(const Stack& stack, PendingCodePoint pending);
  size_t n_states() const { return states_.size(); }
  size_t reads_visits() const { return reads_visits_; }  // states reads_to() has looked from, ever
  void clear();

  // NOTE(grammar): four frames hold a JSON string's character, its repetition, the string
  // (with its closing quote) and what follows it in the object or array, so that `",` and
  // `"}` are decided without the whole state; a free-text or list loop is one or two frames.
  // Fewer frames share more tops across contexts but leave more tokens uncertain (3 made the
  // nested-schema answer's cold masks 1.5x dearer; 5, the generic JSON answer's 1.1x).
  static constexpr size_t kKeptFrames = 4;

 private:
  // Which bytes bring a boundary state back to itself: every non-ASCII code point at once (only
  // where the state's sets take all of them or none), and then ASCII ones (bit b; looked at only
  // where the non-ASCII ones loop).
  struct Loop {
    bool known = false;
    bool ascii_known = false;  // loop_of() looks at them where non_ascii; ascii_loop_of() always
    std::array<uint64_t, 2> ascii = {0, 0};
    bool non_ascii = false;
    int32_t after_non_ascii = -1;  // where every non-ASCII code point leads, if all lead to one
  };
  struct Walk;  // one walk's working state (stack_tokens.cpp)

  TopTokens walk(uint32_t start);
  TopTokens sets_of(Walk& walk);  // the walk's runs as sets, and its dearest step
  bool takes_all_below(Walk& walk, uint32_t state, const TokenTrie::Node& node);
  bool takes_all_but_a_few(Walk& walk, uint32_t state, const TokenTrie::Node& node, uint32_t depth);
  bool takes_run_but_a_few(Walk& walk, const Loop& loop, int32_t looping, uint32_t state, uint32_t depth,
                           uint32_t begin, uint32_t end);
  int32_t root_loop(Walk& walk, uint32_t start);
  bool leads_to(Walk& walk, uint32_t start, uint8_t byte, int32_t looping);
  void take_root_runs(Walk& walk, uint32_t start, std::vector<uint32_t>& rest);
  enum class Verdict : uint8_t { Accepted, Refused, Uncertain };
  Verdict one_token(Walk& walk, uint32_t state, uint32_t position, uint32_t depth, int32_t looping,
                    const std::array<uint64_t, 2>& loop_ascii);
  int32_t looping_state(Walk& walk, uint32_t state);
  const Loop& loop_of(uint32_t state);
  const Loop& ascii_loop_of(uint32_t state);
  // NOTE(grammar): a token that takes some stack down to the sentinel is uncertain, even where
  // another stack reads it whole inside the top: the whole state expands what lies below (its
  // steps then cost more than the top's, and the matcher refuses a byte that passes its budget;
  // mask_oracle_test's BudgetBelowTheTop).
  bool escaped(uint32_t state);          // a stack is at the sentinel
  uint32_t at_boundary(uint32_t state);  // the state with the same stacks and nothing pending
  void grow_side_tables();
  void relied_on(Walk& walk, uint32_t state);
  // Whether every string of `bytes` (ASCII) of up to `depth` bytes is read from the boundary
  // state `state` without reaching the sentinel; `cost` takes the dearest step relied on
  // (stack_tokens_ascii.cpp).
  using AsciiBytes = ByteStates::AsciiBytes;
  bool reads_to(uint32_t state, const AsciiBytes& bytes, uint32_t depth, StepCost& cost);
  bool reads_from(uint32_t state, const AsciiBytes& bytes, uint32_t depth);
  bool failed_before(uint32_t state, const AsciiBytes& bytes, uint32_t depth) const;
  bool reads_whole_subtree(Walk& walk, uint32_t state, const TokenTrie::Node& node);
  // NOTE(grammar): the longest strings reads_to() looks at: longer tokens are rare, and a
  // subtree that holds one is walked. 16 made the cold masks in an email's domain label about
  // twice as dear (more of the trie walked); 24 changed nothing measurable.
  static constexpr uint32_t kMaxReadDepth = 48;
  // NOTE(grammar): the states one reads_to() query, and all of one walk's queries, may look
  // from before answering "not shown" (the subtree is then walked, which is always right). The
  // search covers every string of the bytes, not only the trie's tokens, so a grammar built to
  // branch (`[ -~]* "e" [ -~]{20}`: 2^21 states) would otherwise make each query cost up to
  // kMaxWalkStates states, each up to kMaxReadDepth times; the server compiles user grammars.
  static constexpr uint32_t kMaxReadVisits = 4096;
  static constexpr uint32_t kMaxWalkReadVisits = 1u << 16;
  // Per state: the widest bytes and depth reads_to() has shown it reads (with the dearest step
  // relied on), and how deep the current query has looked from it.
  struct Reads {
    AsciiBytes bytes = {0, 0};
    uint32_t depth = 0;
    StepCost cost;
    uint32_t query = 0;        // the last query that looked from the state
    uint32_t query_depth = 0;  // and to what depth
    // The last query from the state not shown in walk `failed_walk` (none of more bytes or
    // depth would be); all zero where it passed the budget (failed_before()).
    AsciiBytes failed_bytes = {0, 0};
    uint32_t failed_depth = 0;
    uint32_t failed_walk = 0;
  };

  uint32_t sentinel_rule_;                // the rule after the grammar's own
  std::shared_ptr<const Grammar> local_;  // the grammar and the sentinel rule
  std::shared_ptr<const TokenTrie> trie_;
  ByteStates states_;
  std::vector<int8_t> escaped_;  // per state: -1 not known yet, else whether a stack is at the sentinel
  std::vector<Loop> loops_;
  std::unordered_map<uint32_t, TopTokens> tops_;  // by the state of the top alone
  std::vector<int32_t> boundary_;                 // per state in a code point: at_boundary(), once known
  std::vector<uint32_t> relied_stamp_;            // per state: the last walk that relied on it
  std::vector<Reads> reads_;                      // per state
  uint32_t reads_queries_ = 0;
  StepCost query_cost_;                                    // of the current reads_to() query
  std::vector<std::pair<uint32_t, uint32_t>> query_seen_;  // (state, depth) it looked from
  uint32_t query_visits_ = 0;                              // states the current query looked from
  uint32_t walk_read_visits_ = 0;                          // and all queries of walk reads_walk_
  uint32_t reads_walk_ = 0;
  size_t reads_visits_ = 0;
  uint32_t walks_ = 0;
};

}  // namespace gufo::grammar
