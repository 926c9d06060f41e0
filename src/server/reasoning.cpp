// Reasoning split (see reasoning.h).
#include "server/reasoning.h"

namespace gufo::server {

namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

size_t skip_spaces(std::string_view s, size_t from = 0) {
  size_t i = from;
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
        const size_t spaces = skip_spaces(held_, held_spaces_);
        const std::string_view rest = std::string_view(held_).substr(spaces);
        if (rest.substr(0, kOpen.size()) == kOpen) {
          held_.erase(0, spaces + kOpen.size());
          held_spaces_ = 0;
          state_ = State::ReasoningStart;
          continue;
        }
        if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) {  // may still open
          held_spaces_ = spaces;
          return out;
        }
        held_spaces_ = 0;
        state_ = State::Content;  // no thoughts: the text is content as it came, spaces included
        continue;
      }
      case State::ReasoningStart:
        held_.erase(0, skip_spaces(held_));
        if (held_.empty()) return out;
        state_ = State::Reasoning;
        continue;
      case State::Reasoning: {
        // What was held before this piece is whitespace and then at most a partial tag.
        const size_t close = held_.find(kClose, held_spaces_);
        if (close != std::string::npos) {
          std::string_view thoughts = std::string_view(held_).substr(0, close);
          while (!thoughts.empty() && is_space(thoughts.back())) thoughts.remove_suffix(1);
          out.reasoning.append(thoughts);
          held_.erase(0, close + kClose.size());
          held_spaces_ = 0;
          state_ = State::ContentStart;
          continue;
        }
        // Send all but a tail that may become "</think>" and the whitespace before it.
        const size_t tag_start = held_.size() - partial_tag_suffix(held_, kClose);
        size_t keep = tag_start;
        while (keep > held_spaces_ && is_space(held_[keep - 1])) --keep;
        if (keep == held_spaces_) keep = 0;  // all whitespace back to the start
        out.reasoning.append(held_, 0, keep);
        held_.erase(0, keep);
        held_spaces_ = tag_start - keep;
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
  held_spaces_ = 0;
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

// Whether `prompt_tail`, trailing whitespace aside, ends with `tag`.
static bool ends_with_tag(std::string_view prompt_tail, std::string_view tag) {
  while (!prompt_tail.empty() && is_space(prompt_tail.back())) prompt_tail.remove_suffix(1);
  return prompt_tail.ends_with(tag);
}

bool prompt_opens_thinking(std::string_view prompt_tail) { return ends_with_tag(prompt_tail, kOpen); }

bool prompt_closes_thinking(std::string_view prompt_tail) { return ends_with_tag(prompt_tail, kClose); }

std::optional<bool> parse_reasoning_format(std::string_view name) {
  if (name == "none") return false;
  if (name == "deepseek" || name == "auto") return true;
  return std::nullopt;
}

}  // namespace gufo::server
