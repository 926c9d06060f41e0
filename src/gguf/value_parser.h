// Reads one metadata value (any of the 13 types, arrays of arrays included) from a
// ByteReader (reader internals). Array counts are capped by the bytes left before any
// allocation, and nesting is capped at kMaxArrayDepth.
// Tested through tests/unit/gguf (malformed corpus) and tests/fuzz/gguf_reader_fuzz.cpp.
#pragma once

#include <string_view>

#include "core/result.h"
#include "gguf/byte_reader.h"
#include "gguf/value.h"

namespace gufo::gguf {

// Reads a value of `type` at the reader's position. `quoted_key` (already quoted, e.g.
// "'general.name'") names the entry in messages.
Result<Value> parse_value(ByteReader& reader, ValueType type, std::string_view quoted_key);

}  // namespace gufo::gguf
