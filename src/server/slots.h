// llama.cpp's slot API as `gufo serve` answers it (engine/scheduler.h, "Slots"):
//   GET  /slots                          the slots: id, busy, the context each remembers
//   POST /slots/{id}?action=save         {"filename": NAME} -> the slot's context and its keys and
//                                        values to --slot-save-path/NAME (a session file,
//                                        engine/session_file.h, that `gufo run --session` resumes too)
//   POST /slots/{id}?action=restore      {"filename": NAME} -> that file into the prefix cache, and
//                                        the slot remembers its context again
//   POST /slots/{id}?action=erase        the slot forgets its context and its cached blocks go
// Each route takes ?model=NAME (default: the first model). Save and restore need
// --slot-save-path; without it every action is a 501, as in llama.cpp. The pieces here are
// the checks and the bodies; server/slot_routes.cpp wires them. Tested by
// tests/unit/server/slots_test.cpp and tests/functional/cache.test.mjs.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "engine/scheduler.h"
#include "server/api_error.h"

namespace gufo::server {

enum class SlotAction { Save, Restore, Erase };
std::optional<SlotAction> slot_action_named(std::string_view name);

// Why `name` cannot name a file in the slot directory (a path, "." or "..", control
// characters, invalid UTF-8, empty or longer than kMaxSlotFilenameBytes), or nothing when it
// can. NOTE(slots): 255 bytes is the file system's limit, and a save writes NAME.tmp-PID-N first.
inline constexpr size_t kMaxSlotFilenameBytes = 224;
std::optional<std::string> slot_filename_problem(std::string_view name);

// The slot id of a path's {id} ("0", "12"), or nothing for anything else.
std::optional<int32_t> slot_id_of(std::string_view text);

// The status an engine's refusal of a slot action answers with: 400 for a bad request or file,
// 503 (Retry-After) when the KV pool has no room or the engine cannot take it now, 501 when the
// engine keeps no prefix cache, 500 when the file system failed.
ApiError slot_error(const Error& error);

nlohmann::ordered_json slots_body(const std::vector<engine::Scheduler::SlotState>& slots, int64_t n_ctx);
nlohmann::ordered_json slot_saved_body(int32_t slot, const std::string& filename,
                                       const engine::Scheduler::SlotTransfer& saved);
nlohmann::ordered_json slot_restored_body(int32_t slot, const std::string& filename,
                                          const engine::Scheduler::SlotTransfer& restored);
nlohmann::ordered_json slot_erased_body(int32_t slot, int32_t n_erased);

}  // namespace gufo::server
