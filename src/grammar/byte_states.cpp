// ByteStates (see byte_states.h).
#include "grammar/byte_states.h"

#include <algorithm>
#include <bit>
#include <optional>
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
  twins_.emplace_back();
  twins_.back()[0] = kNoTwins;
  groups_.emplace_back();
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
  if (share_twins_ && byte < 0x80 && states_[state].pending().due == 0) {
    const uint8_t twin = twins_of(state)[byte];
    if (twin != byte) {
      const int32_t to = step(state, twin);
      transitions_[state][byte] = to;
      return to;
    }
  }
  return compute(state, byte);
}

// The ASCII bytes each stack top reads, as masks: the groups are the partition of the 128
// bytes that every top's mask refines.
const ByteStates::Twins& ByteStates::twins_of(uint32_t state) {
  Twins& twins = twins_[state];
  if (twins[0] != kNoTwins) return twins;
  const Matcher& m = states_[state];
  const Grammar& g = m.grammar();
  std::vector<AsciiBytes>& groups = groups_[state];
  groups = {{~uint64_t{0}, ~uint64_t{0}}};
  for (const Stack& s : m.stacks()) {
    if (s.empty()) continue;
    const Frame& top = s.back();
    const AsciiBytes read = ascii_of(g, g.rules[top.rule].alternatives[top.alt][top.pos].index);
    for (size_t i = 0, n = groups.size(); i < n; ++i) {
      const AsciiBytes in = {groups[i][0] & read[0], groups[i][1] & read[1]};
      const AsciiBytes out = {groups[i][0] & ~read[0], groups[i][1] & ~read[1]};
      if ((in[0] | in[1]) == 0 || (out[0] | out[1]) == 0) continue;
      groups[i] = in;
      groups.push_back(out);
    }
  }
  for (const AsciiBytes& group : groups) {
    const auto least =
        static_cast<uint8_t>(group[0] != 0 ? std::countr_zero(group[0]) : 64 + std::countr_zero(group[1]));
    for (size_t w = 0; w < 2; ++w) {
      for (uint64_t left = group[w]; left != 0; left &= left - 1)
        twins[w * 64 + static_cast<size_t>(std::countr_zero(left))] = least;
    }
  }
  return twins;
}

const ByteStates::AsciiBytes& ByteStates::ascii_of(const Grammar& g, uint32_t set) {
  if (set_ascii_.size() <= set) {
    set_ascii_.resize(g.char_sets.size());
    set_ascii_known_.resize(g.char_sets.size(), false);
  }
  if (!set_ascii_known_[set]) {
    AsciiBytes read = {0, 0};
    for (uint32_t byte = 0; byte < 0x80; ++byte) {
      if (g.char_sets[set].contains(byte)) read[byte >> 6] |= uint64_t{1} << (byte & 63);
    }
    set_ascii_[set] = read;
    set_ascii_known_[set] = true;
  }
  return set_ascii_[set];
}

int32_t ByteStates::compute(uint32_t state, uint8_t byte) {
  StepCost cost;
  std::optional<Matcher> next = states_[state].after_byte(byte, cost);
  note_cost(state, cost);
  int32_t to = kRefused;
  if (next) {
    if (states_.size() < kMaxWalkStates || ids_.contains(next->key())) {
      to = static_cast<int32_t>(intern(std::move(*next)));
    } else {
      capped_ = true;
    }
  }
  transitions_[state][byte] = to;  // after intern(): it may have grown transitions_
  return to;
}

void ByteStates::clear() {
  states_.clear();
  ids_.clear();
  transitions_.clear();
  dearest_.clear();
  twins_.clear();
  groups_.clear();
  set_ascii_.clear();
  set_ascii_known_.clear();
  capped_ = false;
}

}  // namespace gufo::grammar
