// The slot API's checks and bodies (see slots.h).
#include "server/slots.h"

#include <charconv>

namespace gufo::server {

std::optional<SlotAction> slot_action_named(std::string_view name) {
  if (name == "save") return SlotAction::Save;
  if (name == "restore") return SlotAction::Restore;
  if (name == "erase") return SlotAction::Erase;
  return std::nullopt;
}

namespace {

// The length of the UTF-8 sequence that starts at `at`, or 0 when it is not a valid one.
size_t utf8_length(std::string_view text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || at + n > text.size()) return 0;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<unsigned char>(text[at + i]) & 0xC0) != 0x80) return 0;
  }
  uint32_t code = n == 1 ? lead : lead & (0x7F >> n);
  for (size_t i = 1; i < n; ++i) code = (code << 6) | (static_cast<unsigned char>(text[at + i]) & 0x3F);
  constexpr uint32_t kShortest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kShortest[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

std::optional<std::string> slot_filename_problem(std::string_view name) {
  if (name.empty()) return "an empty file name";
  if (name.size() > kMaxSlotFilenameBytes) {
    return "a file name of " + std::to_string(name.size()) + " bytes (at most " +
           std::to_string(kMaxSlotFilenameBytes) + ")";
  }
  if (name == "." || name == "..") return "'" + std::string(name) + "' is not a file name";
  for (size_t at = 0; at < name.size();) {
    const auto c = static_cast<unsigned char>(name[at]);
    if (c == '/' || c == '\\') return "a file name with a path separator (a name in --slot-save-path only)";
    if (c < 0x20 || c == 0x7F) return "a file name with control characters";
    const size_t n = utf8_length(name, at);
    if (n == 0) return "a file name that is not valid UTF-8";
    at += n;
  }
  return std::nullopt;
}

std::optional<int32_t> slot_id_of(std::string_view text) {
  int32_t id = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || id < 0) return std::nullopt;
  return id;
}

ApiError slot_error(const Error& error) {
  const auto server_error = [&](int status, const char* type, int retry_after_seconds) {
    return ApiError{.status = status,
                    .message = error.message,
                    .type = type,
                    .param = "",
                    .code = "",
                    .retry_after_seconds = retry_after_seconds};
  };
  switch (error.kind) {
    case ErrorKind::Invalid:
      return bad_request(error.message);
    case ErrorKind::OutOfMemory:
    case ErrorKind::Unavailable:
      return server_error(503, "server_error", 1);
    case ErrorKind::DeviceLost:
      return server_error(503, "server_error", 0);
    case ErrorKind::Unsupported:
      return server_error(501, "not_supported_error", 0);
    case ErrorKind::Io:
      return server_error(500, "server_error", 0);
  }
  return bad_request(error.message);
}

nlohmann::ordered_json slots_body(const std::vector<engine::Scheduler::SlotState>& slots, int64_t n_ctx) {
  nlohmann::ordered_json body = nlohmann::ordered_json::array();
  for (const engine::Scheduler::SlotState& slot : slots) {
    body.push_back({{"id", slot.id}, {"n_ctx", n_ctx}, {"is_processing", slot.busy}, {"n_tokens", slot.n_context}});
  }
  return body;
}

nlohmann::ordered_json slot_saved_body(int32_t slot, const std::string& filename,
                                       const engine::Scheduler::SlotTransfer& saved) {
  return {{"id_slot", slot},
          {"filename", filename},
          {"n_saved", saved.n_tokens},
          {"n_written", saved.n_bytes},
          {"timings", {{"save_ms", saved.ms}}}};
}

nlohmann::ordered_json slot_restored_body(int32_t slot, const std::string& filename,
                                          const engine::Scheduler::SlotTransfer& restored) {
  return {{"id_slot", slot},
          {"filename", filename},
          {"n_restored", restored.n_tokens},
          {"n_read", restored.n_bytes},
          {"timings", {{"restore_ms", restored.ms}}}};
}

nlohmann::ordered_json slot_erased_body(int32_t slot, int32_t n_erased) {
  return {{"id_slot", slot}, {"n_erased", n_erased}};
}

}  // namespace gufo::server
