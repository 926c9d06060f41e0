// GBNF text helpers (see gbnf_text.h).
#include "grammar/gbnf_text.h"

#include <algorithm>
#include <cstdio>

namespace gufo::grammar {

namespace {

bool plain_ascii(uint32_t cp) {
  return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z') || (cp >= '0' && cp <= '9');
}

// One code point inside a [class], escaped unless it is a letter or digit.
std::string class_char(uint32_t cp) {
  if (plain_ascii(cp)) return std::string(1, static_cast<char>(cp));
  char buffer[16];
  if (cp < 0x100) {
    std::snprintf(buffer, sizeof buffer, "\\x%02X", cp);
  } else if (cp < 0x10000) {
    std::snprintf(buffer, sizeof buffer, "\\u%04X", cp);
  } else {
    std::snprintf(buffer, sizeof buffer, "\\U%08X", cp);
  }
  return buffer;
}

}  // namespace

std::string gbnf_alternatives(const std::vector<std::string>& alternatives) {
  if (alternatives.empty()) return "";
  if (alternatives.size() == 1) return alternatives.front();
  std::string out = "(";
  for (size_t i = 0; i < alternatives.size(); ++i) out += (i ? " | " : " ") + alternatives[i];
  return out + " )";
}

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte == 0x7F) {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\x%02X", byte);
      out += buffer;
    } else {
      out += c;  // printable ASCII, or a byte of a UTF-8 sequence (copied whole)
    }
  }
  return out + "\"";
}

std::string gbnf_class(const CodePoints& ranges) {
  std::string out = "[";
  for (const auto& [lo, hi] : ranges) {
    out += class_char(lo);
    if (hi != lo) out += "-" + class_char(hi);
  }
  return out + "]";
}

CodePoints normalized(const CodePoints& ranges) {
  // Surrogates out first: each range becomes at most two.
  CodePoints split;
  for (auto [lo, hi] : ranges) {
    if (lo > hi) continue;
    hi = std::min(hi, kLastCodePoint);
    if (lo < 0xD800 && hi >= 0xD800) {
      split.emplace_back(lo, 0xD7FF);
      lo = 0xD800;
    }
    if (lo >= 0xD800 && lo <= 0xDFFF) lo = 0xE000;
    if (lo <= hi) split.emplace_back(lo, hi);
  }
  std::sort(split.begin(), split.end());
  CodePoints out;
  for (const auto& r : split) {
    if (!out.empty() && r.first <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, r.second);
    } else {
      out.push_back(r);
    }
  }
  return out;
}

CodePoints complement(const CodePoints& ranges) {
  CodePoints out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : normalized(ranges)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kLastCodePoint) out.emplace_back(next, kLastCodePoint);
  return normalized(out);
}

CodePoints intersection(const CodePoints& a, const CodePoints& b) {
  CodePoints out;
  for (const auto& [alo, ahi] : a) {
    for (const auto& [blo, bhi] : b) {
      const uint32_t lo = std::max(alo, blo);
      const uint32_t hi = std::min(ahi, bhi);
      if (lo <= hi) out.emplace_back(lo, hi);
    }
  }
  return normalized(out);
}

std::string canonical_escape(uint32_t cp) {
  switch (cp) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default: {
      char buffer[8];
      std::snprintf(buffer, sizeof buffer, "\\u%04x", cp);
      return buffer;
    }
  }
}

std::string json_char_in(const CodePoints& set) {
  const CodePoints escaped = normalized({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
  std::vector<std::string> alternatives;
  const CodePoints raw = intersection(set, complement(escaped));
  if (!raw.empty()) alternatives.push_back(gbnf_class(raw));
  for (const auto& [lo, hi] : intersection(set, escaped)) {
    for (uint32_t cp = lo; cp <= hi; ++cp) alternatives.push_back(gbnf_literal(canonical_escape(cp)));
  }
  return gbnf_alternatives(alternatives);
}

}  // namespace gufo::grammar
