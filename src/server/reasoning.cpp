// Reasoning split (see reasoning.h).
#include "server/reasoning.h"

namespace gufo::server {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

size_t skip_spaces(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// The length of the longest suffix of `s` that is a proper prefix of `tag`: bytes that the
// next piece could complete into the tag.
size_t partial_tag_suffix(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningSplitter::ReasoningSplitter(bool prompt_opened_thinking)
    : state_(prompt_opened_thinking ? State::ReasoningStart : State::Start) {}

ReasoningDelta ReasoningSplitter::feed(std::string_view text) {
  ReasoningDelta out;
  held_.append(text);
  // Each pass either changes state or returns; held_ keeps only what is still undecided.
  for (;;) {
    switch (state_) {
      case State::Start: {
        const std::string_view rest = std::string_view(held_).substr(skip_spaces(held_));
        if (rest.substr(0, kOpen.size()) == kOpen) {
          held_.erase(0, held_.size() - rest.size() + kOpen.size());
          state_ = State::ReasoningStart;
          continue;
        }
        if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return out;  // may still open
        state_ = State::Content;  // no thoughts: the text is content as it came, spaces included
        continue;
      }
      case State::ReasoningStart:
        held_.erase(0, skip_spaces(held_));
        if (held_.empty()) return out;
        state_ = State::Reasoning;
        continue;
      case State::Reasoning: {
        const size_t close = held_.find(kClose);
        if (close != std::string::npos) {
          std::string_view thoughts = std::string_view(held_).substr(0, close);
          while (!thoughts.empty() && is_space(thoughts.back())) thoughts.remove_suffix(1);
          out.reasoning.append(thoughts);
          held_.erase(0, close + kClose.size());
          state_ = State::ContentStart;
          continue;
        }
        // Send all but a tail that may become "</think>" and the whitespace before it.
        size_t keep = held_.size() - partial_tag_suffix(held_, kClose);
        while (keep > 0 && is_space(held_[keep - 1])) --keep;
        out.reasoning.append(held_, 0, keep);
        held_.erase(0, keep);
        return out;
      }
      case State::ContentStart:
        held_.erase(0, skip_spaces(held_));
        if (held_.empty()) return out;
        state_ = State::Content;
        continue;
      case State::Content:
        out.content.append(held_);
        held_.clear();
        return out;
    }
  }
}

ReasoningDelta ReasoningSplitter::finish() {
  ReasoningDelta out;
  switch (state_) {
    case State::Start:
      out.content = std::move(held_);  // "<thi" and no more: that was text, not a tag
      break;
    case State::ReasoningStart:
    case State::ContentStart:
    case State::Content:
      break;  // nothing but whitespace is held here
    case State::Reasoning: {
      std::string_view thoughts = held_;
      while (!thoughts.empty() && is_space(thoughts.back())) thoughts.remove_suffix(1);
      out.reasoning.assign(thoughts);
      break;
    }
  }
  held_.clear();
  state_ = State::Content;
  return out;
}

ReasoningDelta split_reasoning(std::string_view text, bool prompt_opened_thinking) {
  ReasoningSplitter splitter(prompt_opened_thinking);
  ReasoningDelta out = splitter.feed(text);
  ReasoningDelta rest = splitter.finish();
  out.reasoning += rest.reasoning;
  out.content += rest.content;
  return out;
}

bool prompt_opens_thinking(std::string_view prompt_tail) {
  while (!prompt_tail.empty() && is_space(prompt_tail.back())) prompt_tail.remove_suffix(1);
  return prompt_tail.size() >= kOpen.size() && prompt_tail.substr(prompt_tail.size() - kOpen.size()) == kOpen;
}

std::optional<bool> parse_reasoning_format(std::string_view name) {
  if (name == "none") return false;
  if (name == "deepseek" || name == "auto") return true;
  return std::nullopt;
}

}  // namespace gufo::server
