// Read-only mmap of a whole file (see mapped_file.h).
// Tested through tests/unit/gguf/reader_test.cpp.
#include "gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace gufo::gguf {
namespace {

Error system_error(const std::string& path, std::string_view what, int error_number) {
  return Error{path + ": " + std::string(what) + ": " + std::strerror(error_number)};
}

// Closes a descriptor when it goes out of scope.
struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return system_error(path, "cannot open", errno);
  FdCloser closer{fd};

  struct stat info {};
  if (::fstat(fd, &info) != 0) return system_error(path, "cannot stat", errno);
  if (S_ISDIR(info.st_mode)) return Error{path + ": is a directory, not a GGUF file"};
  if (!S_ISREG(info.st_mode)) return Error{path + ": not a regular file"};

  MappedFile mapped;
  if (info.st_size == 0) return mapped;  // mmap refuses length 0; the parser reports it
  const auto size = static_cast<size_t>(info.st_size);
  void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (address == MAP_FAILED) {
    return system_error(path, "cannot map " + std::to_string(size) + " bytes", errno);
  }
  mapped.address_ = address;
  mapped.size_ = size;
  return mapped;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : address_(std::exchange(other.address_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    address_ = std::exchange(other.address_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (address_ != nullptr) ::munmap(address_, size_);
  address_ = nullptr;
  size_ = 0;
}

}  // namespace gufo::gguf
