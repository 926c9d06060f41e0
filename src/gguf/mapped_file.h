// MappedFile: a whole file mapped read-only (POSIX mmap), owned and unmapped on destruction.
// Moving it keeps the mapping's address, so views into it stay valid across moves.
// Tested through tests/unit/gguf/reader_test.cpp (open errors, zero-copy views).
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/result.h"

namespace gufo::gguf {

class MappedFile {
 public:
  MappedFile() = default;
  // Errors start with `path`: "x.gguf: cannot open: No such file or directory".
  static Result<MappedFile> open(const std::string& path);

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  // NOTE(gguf): if another process truncates the file while it is mapped, touching the lost
  // pages raises SIGBUS; that is the price of zero-copy and is not defended against here.
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(address_), size_}; }

 private:
  void reset();

  void* address_ = nullptr;
  size_t size_ = 0;
};

}  // namespace gufo::gguf
