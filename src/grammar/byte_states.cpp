// ByteStates (see byte_states.h).
#include "grammar/byte_states.h"

#include <algorithm>
#include <utility>

namespace gufo::grammar {

uint32_t ByteStates::intern(Matcher state) {
  std::string key = state.key();
  if (auto it = ids_.find(key); it != ids_.end()) return it->second;
  const auto id = static_cast<uint32_t>(states_.size());
  states_.push_back(std::move(state));
  transitions_.emplace_back();
  transitions_.back().fill(kUnknown);
  dearest_.emplace_back();
  ids_.emplace(std::move(key), id);
  return id;
}

void ByteStates::note_cost(uint32_t state, StepCost cost) {
  StepCost& d = dearest_[state];
  d.stacks = std::max(d.stacks, cost.stacks);
  d.frames = std::max(d.frames, cost.frames);
  d.over = d.over || cost.over;
}

int32_t ByteStates::step(uint32_t state, uint8_t byte) {
  const int32_t known = transitions_[state][byte];
  if (known != kUnknown) return known;
  Matcher next = states_[state];
  int32_t to = kRefused;
  const bool accepted = next.accept_byte(byte);
  note_cost(state, next.last_step());
  if (accepted) {
    if (states_.size() < kMaxWalkStates || ids_.contains(next.key())) {
      to = static_cast<int32_t>(intern(std::move(next)));
    } else {
      capped_ = true;
    }
  }
  transitions_[state][byte] = to;  // after intern(): it may have grown transitions_
  return to;
}

void ByteStates::copy_transition(uint32_t state, uint8_t twin, uint8_t byte) {
  transitions_[state][byte] = transitions_[state][twin];
}

void ByteStates::clear() {
  states_.clear();
  ids_.clear();
  transitions_.clear();
  dearest_.clear();
  capped_ = false;
}

}  // namespace gufo::grammar
