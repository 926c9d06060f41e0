// Matcher states interned by key (two matchers with equal keys accept the same continuations)
// and the byte transitions between them, kept as they are met: walking a vocabulary trie from
// a state then costs table lookups, not matcher copies. Each state keeps the dearest step
// computed from it (the matcher's budget measure), which is what the mask needs to know that
// its shortcuts never pass the budget. Not thread-safe (its owner locks).
// Tested through tests/unit/grammar/token_matcher_test.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/matcher.h"

namespace gufo::grammar {

class ByteStates {
 public:
  static constexpr int32_t kRefused = -1;

  uint32_t intern(Matcher state);
  // The state after `byte`, or kRefused. NOTE(grammar): past kMaxWalkStates states a new one
  // is not made (its byte is refused, and capped() says so): only a grammar built to explode
  // gets there.
  int32_t step(uint32_t state, uint8_t byte);
  // Records that `byte` leads where `twin` does (a caller that knows they read the same).
  void copy_transition(uint32_t state, uint8_t twin, uint8_t byte);
  // Whether step(state, byte) is known without reading the byte.
  bool knows(uint32_t state, uint8_t byte) const { return transitions_[state][byte] != kUnknown; }
  // Counts `cost` as a step of `state` (one that a caller took on its behalf).
  void note_cost(uint32_t state, StepCost cost);

  const Matcher& state(uint32_t id) const { return states_[id]; }
  StepCost dearest_step(uint32_t id) const { return dearest_[id]; }
  size_t size() const { return states_.size(); }
  bool capped() const { return capped_; }
  void clear();

  static constexpr size_t kMaxWalkStates = size_t{1} << 15;

 private:
  static constexpr int32_t kUnknown = -2;

  std::vector<Matcher> states_;
  std::unordered_map<std::string, uint32_t> ids_;      // Matcher::key() -> index in states_
  std::vector<std::array<int32_t, 256>> transitions_;  // [state][byte]: next, kRefused or kUnknown
  std::vector<StepCost> dearest_;
  bool capped_ = false;
};

}  // namespace gufo::grammar
