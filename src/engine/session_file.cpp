// Session files (see session_file.h).
#include "engine/session_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <string_view>

#include "core/fnv1a.h"

namespace gufo::engine {

namespace {

constexpr std::string_view kMagic = "GUFOSESS";
constexpr uint64_t kIdentitySample = 4096;
// NOTE(session): bounds on what a file may claim before anything that size is allocated; a
// generator state is ~7 KB of text, a chat's messages are the context's text and more.
constexpr uint32_t kMaxIdentityBytes = 4096;
constexpr uint32_t kMaxGeneratorBytes = 1 << 16;
constexpr uint32_t kMaxNoteBytes = 1 << 28;

std::string hex16(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
  return text;
}

// Appends to a file while hashing what it wrote; the first failure sticks.
class Writer {
 public:
  explicit Writer(std::FILE* file) : file_(file) {}
  void bytes(std::span<const std::byte> data) {
    if (error_ != 0 || data.empty()) return;
    if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) error_ = errno != 0 ? errno : EIO;
    hash_ = fnv1a_64(data, hash_);
  }
  template <class T>
  void scalar(T value) {
    bytes(std::as_bytes(std::span(&value, 1)));
  }
  void string(std::string_view text) {
    scalar(static_cast<uint32_t>(text.size()));
    bytes(std::as_bytes(std::span(text.data(), text.size())));
  }
  // Flushes, syncs to disk and closes: the errno of the first failure so far, 0 if none.
  int finish() {
    if (error_ == 0 && std::fflush(file_) != 0) error_ = errno;
    if (error_ == 0 && ::fsync(::fileno(file_)) != 0) error_ = errno;
    if (std::fclose(file_) != 0 && error_ == 0) error_ = errno;
    file_ = nullptr;
    return error_;
  }
  uint64_t hash() const { return hash_; }

 private:
  std::FILE* file_;
  uint64_t hash_ = kFnv1a64Offset;
  int error_ = 0;
};

// Reads from a file while hashing what it read; errors say what was being read.
class Reader {
 public:
  Reader(std::ifstream& in, std::string path, uint64_t size) : in_(&in), path_(std::move(path)), left_(size) {}
  // Whether `n` more bytes are there, checked before anything that size is allocated.
  Status need(uint64_t n, std::string_view what) const {
    if (n > left_) return truncated(what);
    return {};
  }
  Status bytes(std::span<std::byte> out, std::string_view what) {
    GUFO_RETURN_IF_ERROR(need(out.size(), what));
    in_->read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(out.size()));
    if (static_cast<size_t>(in_->gcount()) != out.size()) return truncated(what);  // shrunk while read
    left_ -= out.size();
    hash_ = fnv1a_64(std::span<const std::byte>(out), hash_);
    return {};
  }
  uint64_t left() const { return left_; }
  template <class T>
  Result<T> scalar(std::string_view what) {
    T value{};
    GUFO_RETURN_IF_ERROR(bytes(std::as_writable_bytes(std::span(&value, 1)), what));
    return value;
  }
  Result<std::string> string(std::string_view what, uint32_t max_bytes) {
    GUFO_ASSIGN_OR_RETURN(const uint32_t size, scalar<uint32_t>(what));
    if (size > max_bytes) {
      return Error{path_ + ": " + std::string(what) + " of " + std::to_string(size) + " bytes (at most " +
                   std::to_string(max_bytes) + ")"};
    }
    GUFO_RETURN_IF_ERROR(need(size, what));
    std::string text(size, '\0');
    GUFO_RETURN_IF_ERROR(bytes(std::as_writable_bytes(std::span(text.data(), text.size())), what));
    return text;
  }
  uint64_t hash() const { return hash_; }

 private:
  Error truncated(std::string_view what) const {
    return Error{path_ + ": truncated (the file ends inside " + std::string(what) + ")"};
  }

  std::ifstream* in_;
  std::string path_;
  uint64_t left_;  // bytes not read yet
  uint64_t hash_ = kFnv1a64Offset;
};

// What a session file says of its cache, checked against the session's before any keys and
// values are read.
Status check_cache(const std::string& path, const backend::KvCacheSpec& spec, std::string_view type, uint64_t n_layer,
                   uint64_t n_embd_kv) {
  const std::string_view ours = dtype_name(spec.type);
  if (type != ours || n_layer != static_cast<uint64_t>(spec.n_layer) ||
      n_embd_kv != static_cast<uint64_t>(spec.n_embd_kv)) {
    return Error{path + ": a KV cache of " + std::to_string(n_layer) + " layers x " + std::to_string(n_embd_kv) + " " +
                 std::string(type) + "; this session's is " + std::to_string(spec.n_layer) + " x " +
                 std::to_string(spec.n_embd_kv) + " " + std::string(ours) +
                 (type != ours ? " (--cache-type)" : " (another model)")};
  }
  return {};
}

Status write_body(Writer& out, const SessionKv& kv, const SessionState& state, const SessionIdentity& identity,
                  int32_t n_kv) {
  const backend::KvCacheSpec& spec = kv.spec;
  out.bytes(std::as_bytes(std::span(kMagic.data(), kMagic.size())));
  out.scalar(kSessionFileVersion);
  out.string(identity.model);
  out.string(identity.build);
  out.string(dtype_name(spec.type));
  out.scalar(static_cast<uint64_t>(spec.n_layer));
  out.scalar(static_cast<uint64_t>(spec.n_embd_kv));
  out.scalar(static_cast<uint32_t>(state.tokens.size()));
  out.bytes(std::as_bytes(std::span(state.tokens)));
  out.scalar(static_cast<uint32_t>(n_kv));
  out.string(state.generator);
  out.string(state.note);
  GUFO_RETURN_IF_ERROR(
      kv.read(n_kv, [&out](int32_t, std::span<const std::byte> k, std::span<const std::byte> v) -> Status {
        out.bytes(k);
        out.bytes(v);
        return {};
      }));
  out.scalar(out.hash());
  return {};
}

// The header: a session file of this model, made by this build, for a cache of this shape.
Status read_identity(Reader& read, const std::string& path, const SessionIdentity& identity,
                     const backend::KvCacheSpec& spec) {
  std::string magic(kMagic.size(), '\0');
  if (!read.bytes(std::as_writable_bytes(std::span(magic.data(), magic.size())), "the header").ok() ||
      magic != kMagic) {
    return Error{path + ": not a Gufo session file"};
  }
  GUFO_ASSIGN_OR_RETURN(const uint32_t version, read.scalar<uint32_t>("the header"));
  if (version != kSessionFileVersion) {
    return Error{path + ": session format " + std::to_string(version) + "; this gufo reads " +
                 std::to_string(kSessionFileVersion)};
  }
  GUFO_ASSIGN_OR_RETURN(const std::string model, read.string("the model's identity", kMaxIdentityBytes));
  if (model != identity.model) {
    return Error{path + ": a session of another model (" + model + "; this one is " + identity.model + ")"};
  }
  GUFO_ASSIGN_OR_RETURN(const std::string build, read.string("the build", kMaxIdentityBytes));
  if (build != identity.build) {
    return Error{path + ": saved by " + build + "; this is " + identity.build +
                 " (its keys and values would not continue the same way)"};
  }
  GUFO_ASSIGN_OR_RETURN(const std::string type, read.string("the cache type", kMaxIdentityBytes));
  GUFO_ASSIGN_OR_RETURN(const uint64_t n_layer, read.scalar<uint64_t>("the cache shape"));
  GUFO_ASSIGN_OR_RETURN(const uint64_t n_embd_kv, read.scalar<uint64_t>("the cache shape"));
  return check_cache(path, spec, type, n_layer, n_embd_kv);
}

// The tokens, the cached positions among them, the generator and the note.
Result<LoadedSession> read_context(Reader& read, const std::string& path, const backend::KvCacheSpec& spec) {
  GUFO_ASSIGN_OR_RETURN(const uint32_t n_tokens, read.scalar<uint32_t>("the token count"));
  if (n_tokens == 0 || n_tokens > spec.n_ctx) {
    return Error{path + ": " + std::to_string(n_tokens) + " tokens; the context holds " + std::to_string(spec.n_ctx) +
                 (n_tokens == 0 ? "" : " (-c)")};
  }
  GUFO_RETURN_IF_ERROR(read.need(uint64_t{n_tokens} * sizeof(int32_t), "the tokens"));
  LoadedSession loaded;
  loaded.state.tokens.resize(n_tokens);
  GUFO_RETURN_IF_ERROR(read.bytes(std::as_writable_bytes(std::span(loaded.state.tokens)), "the tokens"));
  GUFO_ASSIGN_OR_RETURN(const uint32_t n_kv, read.scalar<uint32_t>("the cached positions"));
  if (n_kv >= n_tokens) {
    return Error{path + ": " + std::to_string(n_kv) + " cached positions for " + std::to_string(n_tokens) + " tokens"};
  }
  loaded.n_kv = static_cast<int32_t>(n_kv);
  GUFO_ASSIGN_OR_RETURN(loaded.state.generator, read.string("the generator state", kMaxGeneratorBytes));
  GUFO_ASSIGN_OR_RETURN(loaded.state.note, read.string("the note", kMaxNoteBytes));
  return loaded;
}

// The keys and values into `kv`, then the checksum over the whole file.
Status read_cache(Reader& read, const std::string& path, const SessionKv& kv, int32_t n_kv) {
  const backend::KvCacheSpec& spec = kv.spec;
  const uint64_t cache_bytes = 2 * static_cast<uint64_t>(spec.n_layer) * static_cast<uint64_t>(n_kv) *
                               static_cast<uint64_t>(spec.n_embd_kv) * spec.elem_bytes();
  GUFO_RETURN_IF_ERROR(read.need(cache_bytes + sizeof(uint64_t), "the keys and values"));
  const auto layer = [&read](int32_t, std::span<std::byte> k, std::span<std::byte> v) -> Status {
    GUFO_RETURN_IF_ERROR(read.bytes(k, "the keys and values"));
    return read.bytes(v, "the keys and values");
  };
  GUFO_RETURN_IF_ERROR(kv.write(n_kv, layer));
  const uint64_t expected = read.hash();
  GUFO_ASSIGN_OR_RETURN(const uint64_t checksum, read.scalar<uint64_t>("the checksum"));
  if (checksum != expected) return Error{path + ": corrupt (its checksum does not match)"};
  if (read.left() > 0) return Error{path + ": corrupt (bytes after the checksum)"};
  return {};
}

}  // namespace

std::string model_identity(const gguf::File& file) {
  uint64_t hash = fnv1a_64(file.bytes().first(static_cast<size_t>(file.data_offset())));
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    const std::span<const std::byte> data = tensor.bytes();
    const uint64_t sample = std::min<uint64_t>(kIdentitySample, data.size());
    for (const uint64_t at : {uint64_t{0}, (data.size() - sample) / 2, data.size() - sample}) {
      hash = fnv1a_64(data.subspan(static_cast<size_t>(at), static_cast<size_t>(sample)), hash);
    }
  }
  return "fnv1a64:" + hex16(hash);
}

Status save_session(const std::string& path, const SessionKv& kv, const SessionState& state,
                    const SessionIdentity& identity) {
  if (state.tokens.empty()) return Error{path + ": nothing to save (no tokens)"};
  const auto n_kv = static_cast<int32_t>(std::min<int64_t>(kv.n_filled, static_cast<int64_t>(state.tokens.size()) - 1));
  if (identity.model.size() > kMaxIdentityBytes || identity.build.size() > kMaxIdentityBytes ||
      state.generator.size() > kMaxGeneratorBytes || state.note.size() > kMaxNoteBytes) {
    return Error{path + ": a session larger than a session file holds (identity, generator or note)"};
  }
  // NOTE(session): a temporary file beside the target, renamed over it only when complete and
  // on disk, so that a failure leaves the previous session whole. Owner-only, as the keys and
  // values and a chat's messages are the user's conversation.
  // NOTE(session): a counter beside the pid: two engines of one server may save at once.
  static std::atomic<uint64_t> saves{0};
  const std::string temporary = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(saves++);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  std::FILE* file = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
  if (file == nullptr) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return Error{path + ": cannot write (" + std::string(std::strerror(error)) + ")", ErrorKind::Io};
  }
  Writer out(file);
  Status written = write_body(out, kv, state, identity, n_kv);
  if (const int error = out.finish(); written.ok() && error != 0) {
    written = Error{path + ": cannot write (" + std::string(std::strerror(error)) + ")", ErrorKind::Io};
  }
  std::error_code failed;
  if (written.ok()) std::filesystem::rename(temporary, path, failed);
  if (!written.ok() || failed) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return written.ok() ? Error{path + ": cannot replace it (" + failed.message() + ")", ErrorKind::Io} : written;
  }
  return {};
}

Result<LoadedSession> load_session(const std::string& path, const SessionKv& kv, const SessionIdentity& identity) {
  // Before opening: a FIFO would block the reader (the serving engine's thread) for ever.
  std::error_code kind_error;
  if (std::filesystem::exists(path, kind_error) && !std::filesystem::is_regular_file(path, kind_error)) {
    return Error{path + ": not a regular file"};
  }
  std::ifstream in(path, std::ios::binary);
  std::error_code size_error;
  const uintmax_t size = std::filesystem::file_size(path, size_error);
  if (!in || size_error) {
    return Error{path + ": cannot read the session (" +
                 (size_error ? size_error.message() : std::string(std::strerror(errno))) + ")"};
  }
  Reader read(in, path, size);
  GUFO_RETURN_IF_ERROR(read_identity(read, path, identity, kv.spec));
  GUFO_ASSIGN_OR_RETURN(LoadedSession loaded, read_context(read, path, kv.spec));
  GUFO_RETURN_IF_ERROR(read_cache(read, path, kv, loaded.n_kv));
  loaded.n_bytes = size;
  return loaded;
}

std::string stop_note(StopReason reason) {
  return nlohmann::json{{"stop", std::string(stop_reason_name(reason))}}.dump();
}

SessionKv session_kv(Session& session) {
  return SessionKv{
      .spec = session.cache_spec(),
      .n_filled = session.n_past(),
      .read = [&session](int32_t n,
                         const backend::KvCache::LayerSink& sink) { return session.save_positions(n, sink); },
      .write = [&session](
                   int32_t n,
                   const backend::KvCache::LayerSource& source) { return session.restore_positions(n, source); }};
}

Status save_session(const std::string& path, const Session& session, const SessionState& state,
                    const SessionIdentity& identity) {
  const SessionKv kv{
      .spec = session.cache_spec(),
      .n_filled = session.n_past(),
      .read = [&session](int32_t n,
                         const backend::KvCache::LayerSink& sink) { return session.save_positions(n, sink); },
      .write = nullptr};
  return save_session(path, kv, state, identity);
}

Result<LoadedSession> load_session(const std::string& path, Session& session, const SessionIdentity& identity) {
  session.rewind(0);
  Result<LoadedSession> loaded = load_session(path, session_kv(session), identity);
  if (!loaded) session.rewind(0);
  return loaded;
}

}  // namespace gufo::engine
