// Sessions saved to a file and resumed (gufo run/chat --session): the context's tokens, the
// keys and values the KV cache holds for them, and the sampler's generator, so that a resumed
// run continues token for token as the run that never stopped would have (batch-invariant
// kernels make re-evaluating the last token give the logits it gave then).
//
// The file (little-endian; a "string" is a u32 length and its bytes):
//   "GUFOSESS", u32 version (1)
//   string model      model_identity() of the GGUF the keys and values came from
//   string build      who computed them (the gufo build and the backend's kernels, as the
//                     caller says: SessionIdentity::build)
//   string kv_type    dtype_name(): "F16" or "F32";  u64 n_layer;  u64 n_embd_kv
//   u32 n_tokens, i32 tokens[n_tokens]   the context, prompt and generated tokens in order
//   u32 n_kv          positions with keys and values (< n_tokens: the last token is evaluated
//                     again on resume, for the logits the next token is drawn from)
//   string generator  the sampler's generator state (Sampler::generator_state; may be empty)
//   string note       what the program keeps beside (gufo chat: its messages as JSON)
//   per layer: keys [n_kv, n_embd_kv], then values, in kv_type
//   u64 FNV-1a 64 of every byte before it
// A file is written to a temporary name beside `path` and renamed over it once complete, so a
// failure (a full disk) leaves the previous file as it was. Reading checks everything before
// the cache is touched, except the checksum, which a corrupt tail fails after (the session is
// then left empty). Tested by tests/unit/engine/session_file_test.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "engine/model.h"
#include "engine/request.h"
#include "gguf/file.h"

namespace gufo::engine {

inline constexpr uint32_t kSessionFileVersion = 1;

// "fnv1a64:" and 16 hex digits over the GGUF's header (metadata and tensor table: names,
// types, shapes) and three 4 KiB samples (start, middle, end) of every tensor's data: a
// changed weight anywhere changes it in practice, without reading gigabytes on every save.
std::string model_identity(const gguf::File& file);

struct SessionIdentity {
  std::string model;  // model_identity() of the loaded model
  std::string build;  // e.g. "gufo 0.1.0 (abc123) CPU avx512vnni": another value is refused
};

struct SessionState {
  std::vector<int32_t> tokens;  // the context, in order
  std::string generator;        // the sampler's generator after the last token ("": none)
  std::string note;             // the program's own (gufo chat: its messages, JSON)
};

// A run's note (SessionState::note): how it ended, {"stop": stop_reason_name(reason)}, so that
// a resumed run never goes on past an end the saved run had reached (gufo run --session reads
// it; the serving engine's slot files carry it too).
std::string stop_note(StopReason reason);

struct LoadedSession {
  SessionState state;
  int32_t n_kv = 0;      // positions restored (a Session's n_past())
  uint64_t n_bytes = 0;  // the file's size
};

// Where a session file's keys and values come from and go to: a gufo run/chat Session
// (session_kv), or a slot of the serving engine (engine/scheduler.h).
struct SessionKv {
  backend::KvCacheSpec spec;
  int64_t n_filled = 0;  // positions holding keys and values (what a save can take)
  // Hands positions [0, n) to `sink` a layer at a time (backend::KvCache::read_positions).
  std::function<Status(int32_t n, const backend::KvCache::LayerSink& sink)> read;
  // Takes n positions and fills them from `source` (backend::KvCache::write_positions).
  std::function<Status(int32_t n, const backend::KvCache::LayerSource& source)> write;
};
SessionKv session_kv(Session& session);

// Writes `state` and the keys and values of its first min(kv.n_filled, tokens - 1) positions,
// which must be those of state.tokens. Errors name `path`.
Status save_session(const std::string& path, const SessionKv& kv, const SessionState& state,
                    const SessionIdentity& identity);
Status save_session(const std::string& path, const Session& session, const SessionState& state,
                    const SessionIdentity& identity);

// Reads `path` after checking that the file is a session of this model, made by this build,
// with this cache's shape and type, and that its tokens fit the context; then kv.write() takes
// its keys and values, and the checksum is checked last. Errors name `path` and what differs;
// the file is never written. After a failure kv.write() may have run: the caller undoes it.
Result<LoadedSession> load_session(const std::string& path, const SessionKv& kv, const SessionIdentity& identity);
// The same into `session` (empty before; n_past() becomes n_kv), left empty on any failure.
Result<LoadedSession> load_session(const std::string& path, Session& session, const SessionIdentity& identity);

}  // namespace gufo::engine
