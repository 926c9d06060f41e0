// The GGUF writer (see writer.h): validate, lay out, encode, then write through OUT.tmp and
// rename. Encoding follows ggml docs/gguf.md, "File Structure", little-endian throughout.
// Tested by tests/unit/gguf/writer_test.cpp.
#include "gguf/writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <unordered_set>

#include "gguf/format.h"
#include "gguf/text.h"

namespace gufo::gguf {
namespace {

// ---- encoding ----

using Bytes = std::vector<std::byte>;

template <class T>
void put(Bytes& out, T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

void put_string(Bytes& out, std::string_view text) {
  put<uint64_t>(out, text.size());
  const auto* first = reinterpret_cast<const std::byte*>(text.data());
  out.insert(out.end(), first, first + text.size());
}

void put_array(Bytes& out, const Array& array);

template <class T>
void put_element(Bytes& out, const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    put_string(out, value);
  } else if constexpr (std::is_same_v<T, Array>) {
    put_array(out, value);
  } else if constexpr (std::is_same_v<T, bool>) {
    put<uint8_t>(out, value ? 1 : 0);  // the spec's bool: one byte, 0 or 1
  } else {
    put<T>(out, value);
  }
}

void put_array(Bytes& out, const Array& array) {
  put<uint32_t>(out, static_cast<uint32_t>(array.element_type()));
  put<uint64_t>(out, array.size());
  std::visit(
      [&](const auto& elements) {
        for (const auto& element : elements) {
          using T = typename std::decay_t<decltype(elements)>::value_type;
          put_element<T>(out, element);
        }
      },
      array.elements());
}

void put_value(Bytes& out, const Value& value) {
  std::visit([&](const auto& typed) { put_element<std::decay_t<decltype(typed)>>(out, typed); }, value.data());
}

// ---- validation and layout ----

bool nested_too_deep(const Array& array, int depth) {
  if (depth >= kMaxArrayDepth) return true;
  const auto* inner = array.get_if<Array>();
  if (inner == nullptr) return false;
  for (const Array& element : *inner) {
    if (nested_too_deep(element, depth + 1)) return true;
  }
  return false;
}

struct Layout {
  uint32_t alignment = kDefaultAlignment;
  std::vector<uint64_t> n_bytes;  // per tensor
  Bytes head;                     // header, metadata, tensor infos, padding to the data
  uint64_t total_bytes = 0;
};

Result<uint64_t> tensor_bytes(const TensorSpec& tensor, const std::string& where) {
  const DTypeInfo info = dtype_info(tensor.type);
  if (tensor.shape.empty() || tensor.shape.size() > kMaxDims) {
    return Error{where + "shape has " + std::to_string(tensor.shape.size()) + " dimensions (1 to " +
                 std::to_string(kMaxDims) + " allowed)"};
  }
  constexpr uint64_t kMaxCount = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t n_elements = 1;
  for (size_t dim = 0; dim < tensor.shape.size(); ++dim) {
    const uint64_t extent = tensor.shape[dim];
    if (extent == 0 || extent > kMaxCount || n_elements > kMaxCount / extent) {
      return Error{where + "dimension " + std::to_string(dim) + " is " + std::to_string(extent) +
                   " (dimensions must be at least 1 and the element count fit in int64)"};
    }
    n_elements *= extent;
  }
  if (tensor.shape[0] % info.block_elems != 0) {
    return Error{where + std::string(info.name) + " needs ne0 % " + std::to_string(info.block_elems) + " == 0, got " +
                 std::to_string(tensor.shape[0])};
  }
  const uint64_t n_blocks = n_elements / info.block_elems;
  if (n_blocks > std::numeric_limits<uint64_t>::max() / info.block_bytes) {
    return Error{where + "size in bytes overflows 64 bits"};
  }
  const uint64_t n_bytes = n_blocks * info.block_bytes;
  if (!tensor.fill && tensor.data.size() != n_bytes) {
    return Error{where + "has " + std::to_string(tensor.data.size()) + " bytes of data, but " + std::string(info.name) +
                 " of " + std::to_string(n_elements) + " elements needs " + std::to_string(n_bytes)};
  }
  return n_bytes;
}

Result<Layout> plan_layout(const Writer& writer, const std::string& name) {
  const std::string prefix = name + ": ";
  Layout layout;
  std::unordered_set<std::string_view> seen;
  for (const auto& [key, value] : writer.metadata()) {
    const std::string problem = name_problem(key, kMaxKeyBytes);
    if (!problem.empty()) return Error{prefix + "metadata key: " + problem};
    const Array* array = value.get_if<Array>();
    if (array != nullptr && nested_too_deep(*array, 0)) {
      return Error{prefix + "key " + quote_name(key) + ": arrays nested more than " + std::to_string(kMaxArrayDepth) +
                   " levels deep"};
    }
    if (key == kAlignmentKey) {
      const uint32_t* alignment = value.get_if<uint32_t>();
      if (alignment == nullptr) {
        return Error{prefix + "key " + quote_name(key) + ": expected uint32, found " + value.type_description()};
      }
      if (!is_valid_alignment(*alignment)) {
        return Error{prefix + "key " + quote_name(key) + ": invalid alignment " + std::to_string(*alignment) +
                     " (must be a power of two from 1 to " + std::to_string(kMaxAlignment) + ")"};
      }
      layout.alignment = *alignment;
    }
  }

  for (const TensorSpec& tensor : writer.tensors()) {
    const std::string where = prefix + "tensor " + quote_name(tensor.name) + ": ";
    const std::string problem = name_problem(tensor.name, kMaxWrittenTensorNameBytes);
    if (!problem.empty()) return Error{prefix + "tensor name: " + problem};
    if (!seen.insert(tensor.name).second) return Error{where + "duplicate tensor name"};
    GUFO_ASSIGN_OR_RETURN(uint64_t n_bytes, tensor_bytes(tensor, where));
    layout.n_bytes.push_back(n_bytes);
  }

  // Header, metadata, tensor infos: the spec's gguf_header_t and gguf_tensor_info_t.
  Bytes& head = layout.head;
  head.insert(head.end(), reinterpret_cast<const std::byte*>(kMagic.data()),
              reinterpret_cast<const std::byte*>(kMagic.data()) + kMagic.size());
  put<uint32_t>(head, kWriteVersion);
  put<uint64_t>(head, writer.tensors().size());
  put<uint64_t>(head, writer.metadata().size());
  for (const auto& [key, value] : writer.metadata()) {
    put_string(head, key);
    put<uint32_t>(head, static_cast<uint32_t>(value.type()));
    put_value(head, value);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < writer.tensors().size(); ++i) {
    const TensorSpec& tensor = writer.tensors()[i];
    put_string(head, tensor.name);
    put<uint32_t>(head, static_cast<uint32_t>(tensor.shape.size()));
    for (uint64_t extent : tensor.shape) put<uint64_t>(head, extent);
    put<uint32_t>(head, static_cast<uint32_t>(tensor.type));
    put<uint64_t>(head, offset);
    const uint64_t padded = align_up(layout.n_bytes[i], layout.alignment);
    if (padded < layout.n_bytes[i] || offset > std::numeric_limits<uint64_t>::max() - padded) {
      return Error{prefix + "tensor data adds up to more than 2^64 bytes"};
    }
    offset += padded;
  }
  // NOTE(gguf): gguf-py pads after the tensor infos even when there are no tensors; so do we.
  head.resize(align_up(head.size(), layout.alignment), std::byte{0});
  if (offset > std::numeric_limits<uint64_t>::max() - head.size()) {
    return Error{prefix + "tensor data adds up to more than 2^64 bytes"};
  }
  layout.total_bytes = head.size() + offset;
  return layout;
}

// ---- output ----

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status write(std::span<const std::byte> bytes) = 0;
};

class MemorySink final : public Sink {
 public:
  explicit MemorySink(Bytes& out) : out_(out) {}
  Status write(std::span<const std::byte> bytes) override {
    out_.insert(out_.end(), bytes.begin(), bytes.end());
    return ok_status();
  }

 private:
  Bytes& out_;
};

class FdSink final : public Sink {
 public:
  FdSink(int fd, const std::string& path) : fd_(fd), path_(path) {}
  Status write(std::span<const std::byte> bytes) override {
    while (!bytes.empty()) {
      const ssize_t n = ::write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const int error_number = n < 0 ? errno : EIO;
        return Error{path_ + ": cannot write: " + std::strerror(error_number)};
      }
      bytes = bytes.subspan(static_cast<size_t>(n));
    }
    return ok_status();
  }

 private:
  int fd_;
  const std::string& path_;
};

Status emit(const Writer& writer, const Layout& layout, Sink& sink, const std::string& name) {
  GUFO_RETURN_IF_ERROR(sink.write(layout.head));
  const Bytes zeros(layout.alignment, std::byte{0});
  Bytes scratch;
  for (size_t i = 0; i < writer.tensors().size(); ++i) {
    const TensorSpec& tensor = writer.tensors()[i];
    const uint64_t n_bytes = layout.n_bytes[i];
    std::span<const std::byte> data = tensor.data;
    if (tensor.fill) {
      scratch.assign(n_bytes, std::byte{0});
      Status filled = tensor.fill(scratch);
      if (!filled.ok()) {
        return Error{name + ": tensor " + quote_name(tensor.name) + ": " + filled.error().message};
      }
      data = scratch;
    }
    GUFO_RETURN_IF_ERROR(sink.write(data));
    const uint64_t padding = align_up(n_bytes, layout.alignment) - n_bytes;
    GUFO_RETURN_IF_ERROR(sink.write(std::span<const std::byte>(zeros).first(padding)));
  }
  return ok_status();
}

Status refuse_inputs(const std::string& path, const WriteOptions& options) {
  for (const std::string& input : options.input_paths) {
    std::error_code ec;
    if (std::filesystem::equivalent(path, input, ec)) {
      return Error{path + ": refusing to overwrite the input file " + input};
    }
  }
  return ok_status();
}

Error system_error(const std::string& path, const std::string& what, int error_number) {
  return Error{path + ": " + what + ": " + std::strerror(error_number)};
}

}  // namespace

void Writer::set(std::string key, Value value) {
  for (auto& [existing, old_value] : metadata_) {
    if (existing == key) {
      old_value = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void Writer::add_tensor(TensorSpec tensor) { tensors_.push_back(std::move(tensor)); }

Result<std::vector<std::byte>> Writer::to_bytes(const std::string& name) const {
  GUFO_ASSIGN_OR_RETURN(Layout layout, plan_layout(*this, name));
  Bytes out;
  out.reserve(layout.total_bytes);
  MemorySink sink(out);
  GUFO_RETURN_IF_ERROR(emit(*this, layout, sink, name));
  return out;
}

Status Writer::write(const std::string& path, const WriteOptions& options) const {
  GUFO_ASSIGN_OR_RETURN(Layout layout, plan_layout(*this, path));
  GUFO_RETURN_IF_ERROR(refuse_inputs(path, options));

  const std::string tmp_path = path + ".tmp";
  // NOTE(gguf): O_NOFOLLOW so a planted OUT.tmp symlink cannot redirect the write.
  const int fd = ::open(tmp_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return system_error(path, "cannot create " + tmp_path, errno);

  FdSink sink(fd, path);
  Status written = emit(*this, layout, sink, path);
  if (written.ok() && ::fsync(fd) != 0) written = system_error(path, "cannot sync " + tmp_path, errno);
  if (::close(fd) != 0 && written.ok()) written = system_error(path, "cannot close " + tmp_path, errno);
  if (written.ok() && ::rename(tmp_path.c_str(), path.c_str()) != 0) {
    written = system_error(path, "cannot rename " + tmp_path + " to " + path, errno);
  }
  if (!written.ok()) ::unlink(tmp_path.c_str());
  return written;
}

}  // namespace gufo::gguf
