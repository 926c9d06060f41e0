// The slot API's pieces (server/slots.h): which file names a slot file may have (none that
// leaves --slot-save-path), slot ids and actions as llama.cpp's routes take them, the
// status of each refusal, and the bodies llama.cpp's clients read.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "server/slots.h"

namespace gufo::server {
namespace {

TEST(SlotFilename, NamesInTheDirectoryAreTakenAndPathsAreNot) {
  for (const std::string& name :
       std::vector<std::string>{"a.slot", "conversation 1.bin", "..hidden", "x..y", "caf\xc3\xa9.bin",
                                "\xf0\x9f\xa6\x89", std::string(224, 'n')}) {
    EXPECT_EQ(slot_filename_problem(name), std::nullopt) << name;
  }
  const std::pair<std::string, std::string> refused[] = {
      {"", "an empty file name"},
      {std::string(225, 'n'), "a file name of 225 bytes (at most 224)"},
      {".", "'.' is not a file name"},
      {"..", "'..' is not a file name"},
      {"../secret", "a file name with a path separator (a name in --slot-save-path only)"},
      {"/etc/passwd", "a file name with a path separator (a name in --slot-save-path only)"},
      {"a\\b", "a file name with a path separator (a name in --slot-save-path only)"},
      {std::string("a\0b", 3), "a file name with control characters"},
      {"line\nbreak", "a file name with control characters"},
      {"del\x7f", "a file name with control characters"},
      {"\xc3", "a file name that is not valid UTF-8"},
      {"\xc0\xaf", "a file name that is not valid UTF-8"},          // an overlong '/'
      {"\xed\xa0\x80", "a file name that is not valid UTF-8"},      // a surrogate
      {"\xf4\x90\x80\x80", "a file name that is not valid UTF-8"},  // past U+10FFFF
  };
  for (const auto& [name, problem] : refused) EXPECT_EQ(slot_filename_problem(name), problem) << name;
}

TEST(SlotRoute, IdsAndActionsAsLlamaCppSendsThem) {
  EXPECT_EQ(slot_id_of("0"), 0);
  EXPECT_EQ(slot_id_of("12"), 12);
  for (const char* bad : {"", "-1", "1x", " 1", "0x1", "99999999999"}) EXPECT_EQ(slot_id_of(bad), std::nullopt) << bad;
  EXPECT_EQ(slot_action_named("save"), SlotAction::Save);
  EXPECT_EQ(slot_action_named("restore"), SlotAction::Restore);
  EXPECT_EQ(slot_action_named("erase"), SlotAction::Erase);
  EXPECT_EQ(slot_action_named("Save"), std::nullopt);
  EXPECT_EQ(slot_action_named(""), std::nullopt);
}

TEST(SlotRoute, RefusalsAnswerWithTheirStatus) {
  EXPECT_EQ(slot_error(Error{"slot 9: the engine's slots are 0..3"}).status, 400);
  const ApiError full =
      slot_error(Error{"a.slot: 900 positions; the KV pool has room for 64 now", ErrorKind::OutOfMemory});
  EXPECT_EQ(full.status, 503);
  EXPECT_EQ(full.retry_after_seconds, 1);
  const ApiError stopping = slot_error(Error{"the engine is shutting down", ErrorKind::Unavailable});
  EXPECT_EQ(stopping.status, 503);
  EXPECT_EQ(stopping.retry_after_seconds, 1);
  EXPECT_EQ(slot_error(Error{"slots keep their contexts in the prefix cache", ErrorKind::Unsupported}).status, 501);
  EXPECT_EQ(slot_error(Error{"a.slot: cannot write (No space left on device)", ErrorKind::Io}).status, 500);
  EXPECT_EQ(slot_error(Error{"device lost", ErrorKind::DeviceLost}).status, 503);
}

TEST(SlotRoute, BodiesHaveLlamaCppsFields) {
  const engine::Scheduler::SlotTransfer moved{.n_tokens = 50, .n_kv = 49, .n_bytes = 4096, .ms = 1.5};
  EXPECT_EQ(slot_saved_body(1, "a.slot", moved).dump(),
            R"({"id_slot":1,"filename":"a.slot","n_saved":50,"n_written":4096,"timings":{"save_ms":1.5}})");
  EXPECT_EQ(slot_restored_body(0, "a.slot", moved).dump(),
            R"({"id_slot":0,"filename":"a.slot","n_restored":50,"n_read":4096,"timings":{"restore_ms":1.5}})");
  EXPECT_EQ(slot_erased_body(2, 41).dump(), R"({"id_slot":2,"n_erased":41})");
  EXPECT_EQ(slots_body({{.id = 0, .busy = true, .n_context = 7}, {.id = 1, .busy = false, .n_context = 0}}, 512).dump(),
            R"([{"id":0,"n_ctx":512,"is_processing":true,"n_tokens":7},)"
            R"({"id":1,"n_ctx":512,"is_processing":false,"n_tokens":0}])");
}

}  // namespace
}  // namespace gufo::server
