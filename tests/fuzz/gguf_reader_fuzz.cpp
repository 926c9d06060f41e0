// libFuzzer target for the GGUF reader: parses arbitrary bytes through gguf::File::parse and
// checks invariants a parse must keep. Any crash, sanitizer report or broken invariant is a
// bug; keep the input in tests/data/bad/ (with a line in expected_fuzz.txt).
// Run: tests/fuzz/run_fuzz.sh SECONDS; regression: ctest -L unit (asan preset).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/value_text.h"
#include "gguf/writer.h"

namespace {

using gufo::gguf::File;

// Reports a broken invariant and stops, so libFuzzer saves the input.
[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "gguf_reader_fuzz: invariant broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

// An error must be one printable line that names the input.
void check_error(const std::string& message) {
  if (message.rfind("fuzz.gguf: ", 0) != 0) fail("error does not name the file", message);
  for (char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) fail("control byte in error message", message);
  }
}

// Everything a consumer may touch must be inside the input.
void check_file(const File& file, std::span<const std::byte> bytes) {
  volatile unsigned sink = 0;
  for (const gufo::gguf::MetadataEntry& entry : file.metadata()) {
    if (file.find(entry.key) != &entry) fail("metadata lookup", entry.key);
    sink = sink + static_cast<unsigned>(gufo::gguf::value_to_text(entry.value).size());
  }
  for (const gufo::gguf::TensorInfo& tensor : file.tensors()) {
    if (file.find_tensor(tensor.name) != &tensor) fail("tensor lookup", tensor.name);
    if (tensor.data < bytes.data() || tensor.n_bytes > bytes.size() ||
        tensor.data + tensor.n_bytes > bytes.data() + bytes.size()) {
      fail("tensor data outside the input", tensor.name);
    }
    if (tensor.n_bytes != 0) {
      sink = sink + static_cast<unsigned>(tensor.data[0]) + static_cast<unsigned>(tensor.data[tensor.n_bytes - 1]);
    }
  }
  (void)sink;
}

// What the reader accepts, the writer must write again and the reader read back the same
// (except names of 64 bytes, which the reader takes per the spec and the writer refuses).
void check_round_trip(const File& file) {
  gufo::gguf::Writer writer;
  for (const gufo::gguf::MetadataEntry& entry : file.metadata()) writer.set(entry.key, entry.value);
  for (const gufo::gguf::TensorInfo& tensor : file.tensors()) {
    if (tensor.name.size() > gufo::gguf::kMaxWrittenTensorNameBytes) return;
    writer.add_tensor({tensor.name,
                       tensor.type,
                       std::vector<uint64_t>(tensor.shape().begin(), tensor.shape().end()),
                       tensor.bytes(),
                       {}});
  }
  auto written = writer.to_bytes("fuzz.gguf");
  if (!written.ok()) fail("writer refused what the reader accepted", written.error().message);
  auto reread = File::parse(*written, "fuzz.gguf");
  if (!reread.ok()) fail("reader refused what the writer wrote", reread.error().message);
  if (reread->metadata().size() != file.metadata().size()) fail("metadata count changed", "");
  for (size_t i = 0; i < file.metadata().size(); ++i) {
    const auto& before = file.metadata()[i];
    const auto& after = reread->metadata()[i];
    if (before.key != after.key || !(before.value == after.value)) fail("metadata changed", before.key);
  }
  if (reread->tensors().size() != file.tensors().size()) fail("tensor count changed", "");
  for (size_t i = 0; i < file.tensors().size(); ++i) {
    const auto& before = file.tensors()[i];
    const auto& after = reread->tensors()[i];
    if (before.name != after.name || before.type != after.type || before.ne != after.ne ||
        before.n_bytes != after.n_bytes ||
        !std::equal(before.bytes().begin(), before.bytes().end(), after.bytes().begin())) {
      fail("tensor changed", before.name);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto file = File::parse(bytes, "fuzz.gguf");
  if (!file.ok()) {
    check_error(file.error().message);
    return 0;
  }
  check_file(*file, bytes);
  check_round_trip(*file);
  return 0;
}
