// Matcher states interned by key (two matchers with equal keys accept the same continuations)
// and the byte transitions between them, kept as they are met: walking a vocabulary trie from
// a state then costs table lookups, not matcher copies. Each state keeps the dearest step
// computed from it (the matcher's budget measure), which is what the mask needs to know that
// its shortcuts never pass the budget. ASCII bytes that the same stacks read lead to the same
// state at the same cost, so between code points one matcher step stands for all of a state's
// "twin" bytes (the rest copy its transition). Not thread-safe (its owner locks).
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

  // `share_twins`: false steps every byte alone (the oracle of tests, independent of the twins).
  explicit ByteStates(bool share_twins = true) : share_twins_(share_twins) {}

  uint32_t intern(Matcher state);
  // The state after `byte`, or kRefused. NOTE(grammar): past kMaxWalkStates states a new one
  // is not made (its byte is refused, and capped() says so): only a grammar built to explode
  // gets there.
  int32_t step(uint32_t state, uint8_t byte);
  // The ASCII bytes of a state between code points in groups that the same stacks read (each
  // group's bytes lead to one state): bit b of a group's words for byte b.
  using AsciiBytes = std::array<uint64_t, 2>;
  const std::vector<AsciiBytes>& twin_groups(uint32_t state) {
    twins_of(state);
    return groups_[state];
  }
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
  using Twins = std::array<uint8_t, 128>;  // per ASCII byte: the least byte read by the same stacks
  int32_t compute(uint32_t state, uint8_t byte);
  const Twins& twins_of(uint32_t state);
  const AsciiBytes& ascii_of(const Grammar& g, uint32_t set);  // the ASCII bytes of char_sets[set]

  std::vector<Matcher> states_;
  std::unordered_map<std::string, uint32_t> ids_;      // Matcher::key() -> index in states_
  std::vector<std::array<int32_t, 256>> transitions_;  // [state][byte]: next, kRefused or kUnknown
  std::vector<StepCost> dearest_;
  std::vector<Twins> twins_;                     // [state]; twins_[state][0] == kNoTwins until computed
  std::vector<std::vector<AsciiBytes>> groups_;  // [state], with twins_
  std::vector<AsciiBytes> set_ascii_;            // by char set, once known
  std::vector<bool> set_ascii_known_;
  static constexpr uint8_t kNoTwins = 0xFF;
  bool share_twins_;
  bool capped_ = false;
};

}  // namespace gufo::grammar
