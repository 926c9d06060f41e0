// A bounds-checked little-endian cursor over the bytes of a GGUF file (reader internals).
// Every read checks the bytes left first, so nothing is read or allocated past the end.
// Tested through tests/unit/gguf (truncation cases of the malformed corpus) and the fuzzer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/result.h"

namespace gufo::gguf {

class ByteReader {
 public:
  // file_name prefixes every error; it must outlive the reader.
  ByteReader(std::span<const std::byte> bytes, std::string_view file_name) : bytes_(bytes), file_name_(file_name) {}

  uint64_t offset() const { return offset_; }
  uint64_t size() const { return bytes_.size(); }
  uint64_t remaining() const { return bytes_.size() - offset_; }
  std::string_view file_name() const { return file_name_; }

  // "<file>: <message>", the prefix of every reader error.
  Error error(std::string_view message) const { return Error{std::string(file_name_) + ": " + std::string(message)}; }

  // "<file>: truncated <what> at offset N: needs K bytes, M left".
  Error truncated(std::string_view what, uint64_t needed) const {
    return error("truncated " + std::string(what) + " at offset " + std::to_string(offset_) + ": needs " +
                 std::to_string(needed) + " bytes, " + std::to_string(remaining()) + " left");
  }

  // A fixed-size little-endian scalar (the host is little-endian, see format.h).
  template <class T>
  Result<T> read(std::string_view what) {
    static_assert(std::is_trivially_copyable_v<T>);
    if (remaining() < sizeof(T)) return truncated(what, sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + offset_, sizeof(T));
    offset_ += sizeof(T);
    return value;
  }

  // A view of the next n bytes (no copy).
  Result<std::string_view> read_bytes(uint64_t n, std::string_view what) {
    if (remaining() < n) return truncated(what, n);
    std::string_view view(reinterpret_cast<const char*>(bytes_.data() + offset_), n);
    offset_ += n;
    return view;
  }

  // A GGUF string (uint64 length, then the bytes) as a view into the file. A length past
  // the end of the file is reported as such before anything is allocated.
  Result<std::string_view> read_string(std::string_view what) {
    const uint64_t start = offset_;
    GUFO_ASSIGN_OR_RETURN(uint64_t length, read<uint64_t>(what));
    if (length > remaining()) {
      offset_ = start;
      return error(std::string(what) + " at offset " + std::to_string(start) + ": length " + std::to_string(length) +
                   " runs past the end of the file (" + std::to_string(remaining() - 8) + " bytes left)");
    }
    return read_bytes(length, what);
  }

 private:
  std::span<const std::byte> bytes_;
  std::string_view file_name_;
  uint64_t offset_ = 0;
};

}  // namespace gufo::gguf
