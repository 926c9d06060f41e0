// libFuzzer target: GBNF text (up to the first 0 byte) through parse_gbnf, and, when it
// parses, the rest of the input through a Matcher byte by byte. Neither may crash, hang or
// take memory the limits do not bound. Seeds: tests/unit/grammar's grammars (run_fuzz.sh).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "grammar/gbnf.h"
#include "grammar/matcher.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view text = input.substr(0, split);
  const std::string_view rest = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  auto parsed = gufo::grammar::parse_gbnf(
      text, {.max_bytes = 1 << 16, .max_symbols = 1 << 16, .max_nesting = 64, .max_repeat = 256});
  if (!parsed.ok()) return 0;
  gufo::grammar::Matcher matcher(std::make_shared<const gufo::grammar::Grammar>(std::move(parsed).value()));
  for (const char c : rest.substr(0, 256)) {
    if (!matcher.accept_byte(static_cast<uint8_t>(c))) break;
  }
  (void)matcher.can_end();
  return 0;
}
