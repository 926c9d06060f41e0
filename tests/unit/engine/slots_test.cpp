// The serving engine's slots (engine/scheduler.h, "Slots") on a tiny converted model: a slot
// saved in one engine and restored in another makes the next request start after its context
// and answer as an engine that computed everything; the file is a session file that a plain
// Session reads; erase forgets the context and its blocks; a request that asks for a busy slot
// waits for it; refused files and slot ids change nothing and leak no blocks.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "engine/session_file.h"
#include "tests/unit/common/tiny_model.h"
#include "tests/unit/engine/requests.h"

namespace gufo::engine {
namespace {

namespace fs = std::filesystem;
using namespace test;
using namespace std::chrono_literals;

RequestOptions in_slot(int32_t slot, int32_t max_tokens) {
  RequestOptions o = greedy(max_tokens);
  o.slot = slot;
  return o;
}

class Slots : public EngineTest {
 protected:
  void SetUp() override {
    EngineTest::SetUp();
    dir = fs::temp_directory_path() / ("gufo_slots_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }

  std::unique_ptr<Scheduler> make() { return EngineTest::make({.n_parallel = 2, .n_ctx = 128}); }
  SessionIdentity identity() const { return {.model = model_identity(tiny.model->file()), .build = "gufo test CPU"}; }
  int32_t context_of(Scheduler& s, int32_t slot) {
    auto slots = s.slots();
    EXPECT_TRUE(slots.ok());
    return slots.ok() ? (*slots)[static_cast<size_t>(slot)].n_context : -1;
  }
  std::string file(const std::string& name) const { return (dir / name).string(); }

  fs::path dir;
};

TEST_F(Slots, ARestoredSlotStartsTheNextRequestAfterItsContext) {
  const std::vector<int32_t> prompt = prompt_of(40, 3);
  auto first = make();
  const Outcome answer = run_one(*first, prompt, in_slot(1, 10));
  ASSERT_TRUE(answer.error.empty()) << answer.error;
  ASSERT_EQ(context_of(*first, 1), 50);
  EXPECT_EQ(context_of(*first, 0), 0);
  auto saved = first->save_slot(1, file("a.slot"), identity());
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  // 50 tokens; the last generated one was never evaluated, the 49 before it are cached.
  EXPECT_EQ(saved->n_tokens, 50);
  EXPECT_EQ(saved->n_kv, 49);
  EXPECT_EQ(saved->n_bytes, fs::file_size(file("a.slot")));

  // The file is a session file: a plain session reads the same context.
  auto session = Session::create(*tiny.model, tiny.cpu, 128, DType::F32);
  ASSERT_TRUE(session.ok());
  auto loaded = load_session(file("a.slot"), *session, identity());
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->n_kv, 49);
  ASSERT_EQ(loaded->state.tokens.size(), 50u);
  EXPECT_TRUE(std::equal(prompt.begin(), prompt.end(), loaded->state.tokens.begin()));

  auto second = make();
  auto restored = second->restore_slot(0, file("a.slot"), identity());
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  EXPECT_EQ(restored->n_tokens, 50);
  EXPECT_EQ(restored->n_kv, 49);
  EXPECT_EQ(context_of(*second, 0), 50);

  std::vector<int32_t> longer = loaded->state.tokens;
  for (int32_t t : prompt_of(6, 9)) longer.push_back(t);
  const Outcome continued = run_one(*second, longer, greedy(12));
  ASSERT_TRUE(continued.error.empty()) << continued.error;
  ASSERT_EQ(continued.done.size(), 1u);
  EXPECT_EQ(continued.done[0].cached_tokens, 49);
  RequestOptions uncached = greedy(12);
  uncached.use_prefix_cache = false;
  const Outcome computed = run_one(*make(), longer, uncached);
  EXPECT_EQ(continued.text[0], computed.text[0]);
  EXPECT_EQ(second->stats().kv_blocks_used, 0);
}

TEST_F(Slots, EraseForgetsTheContextAndItsCachedBlocks) {
  auto s = make();
  const std::vector<int32_t> prompt = prompt_of(37, 5);
  ASSERT_TRUE(run_one(*s, prompt, in_slot(0, 4)).error.empty());
  EXPECT_EQ(run_one(*s, prompt, in_slot(1, 4)).done.at(0).cached_tokens, 36);
  auto erased = s->erase_slot(1);
  ASSERT_TRUE(erased.ok()) << erased.error().message;
  auto erased0 = s->erase_slot(0);
  ASSERT_TRUE(erased0.ok());
  EXPECT_EQ(*erased0 + *erased, 41 + 41);
  EXPECT_EQ(context_of(*s, 0), 0);
  EXPECT_EQ(context_of(*s, 1), 0);
  EXPECT_EQ(s->stats().kv_blocks_cached, 0);
  EXPECT_EQ(run_one(*s, prompt, greedy(4)).done.at(0).cached_tokens, 0);
  auto again = s->save_slot(0, file("none.slot"), identity());
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, "slot 0 holds no context to save");
  EXPECT_FALSE(fs::exists(file("none.slot")));
}

TEST_F(Slots, ARequestForABusySlotWaitsForIt) {
  auto s = make();
  Submission a = s->submit(prompt_of(9, 1), {in_slot(1, 30)});
  Submission b = s->submit(prompt_of(12, 2), {in_slot(1, 5)});
  ASSERT_EQ(a.status, SubmitStatus::Accepted);
  ASSERT_EQ(b.status, SubmitStatus::Accepted);
  // b's first event comes after a's last: a has finished by then (slot 0 stayed free).
  const std::optional<RequestEvent> b_first = b.handle->next(30s);
  ASSERT_TRUE(b_first.has_value());
  bool a_done = false;
  while (std::optional<RequestEvent> e = a.handle->next(0s)) a_done = a_done || e->kind == RequestEvent::Kind::Done;
  EXPECT_TRUE(a_done);
  const Outcome got_b = collect(b.handle);
  ASSERT_TRUE(got_b.error.empty()) << got_b.error;
  EXPECT_EQ(context_of(*s, 1), 12 + got_b.done.at(0).completion_tokens);
  EXPECT_EQ(context_of(*s, 0), 0);
}

TEST_F(Slots, ASaveWhileTheSlotRunsWaitsForItsGeneration) {
  auto s = make();
  Submission a = s->submit(prompt_of(10, 6), {in_slot(0, 40)});
  ASSERT_EQ(a.status, SubmitStatus::Accepted);
  ASSERT_TRUE(a.handle->next(30s).has_value());  // running now
  auto saved = s->save_slot(0, file("busy.slot"), identity());
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  // By the time the save ran, the generation was over: the file has all of it.
  const Outcome rest = collect(a.handle);
  ASSERT_EQ(rest.done.size(), 1u);
  EXPECT_EQ(saved->n_tokens, 10 + rest.done[0].completion_tokens);
  EXPECT_EQ(saved->n_kv, saved->n_tokens - 1);
}

TEST_F(Slots, RefusedSlotsAndFilesChangeNothing) {
  auto s = make();
  ASSERT_TRUE(run_one(*s, prompt_of(20, 4), in_slot(0, 3)).error.empty());
  ASSERT_TRUE(s->save_slot(0, file("good.slot"), identity()).ok());
  const EngineStats before = s->stats();

  auto far = s->save_slot(2, file("x.slot"), identity());
  ASSERT_FALSE(far.ok());
  EXPECT_EQ(far.error().message, "slot 2: the engine's slots are 0..1");
  EXPECT_EQ(s->submit(prompt_of(5, 1), {in_slot(2, 3)}).status, SubmitStatus::Invalid);
  EXPECT_EQ(s->submit(prompt_of(5, 1), {in_slot(0, 3), in_slot(0, 3)}).status, SubmitStatus::Invalid);

  auto foreign = s->restore_slot(1, file("good.slot"), {.model = "fnv1a64:0000000000000000", .build = "gufo test CPU"});
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.error().message.find("a session of another model"), std::string::npos) << foreign.error().message;
  auto missing = s->restore_slot(1, file("missing.slot"), identity());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("missing.slot: cannot read the session"), std::string::npos);

  // A file cut short fails before a block is taken; one whose keys or values changed fails on
  // its checksum after they went into fresh blocks, which go back to the pool uncached.
  const auto size = fs::file_size(file("good.slot"));
  fs::copy_file(file("good.slot"), file("cut.slot"));
  fs::resize_file(file("cut.slot"), size - 100);
  auto cut = s->restore_slot(1, file("cut.slot"), identity());
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("truncated"), std::string::npos) << cut.error().message;
  std::string bytes;
  {
    std::ifstream in(file("good.slot"), std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() - 20] ^= 1;  // a key or value changed: the checksum finds it
  std::ofstream(file("flipped.slot"), std::ios::binary) << bytes;
  auto flipped = s->restore_slot(1, file("flipped.slot"), identity());
  ASSERT_FALSE(flipped.ok());
  EXPECT_NE(flipped.error().message.find("corrupt"), std::string::npos) << flipped.error().message;

  const EngineStats after = s->stats();
  EXPECT_EQ(after.kv_blocks_used, 0);
  EXPECT_EQ(after.kv_blocks_cached, before.kv_blocks_cached);
  EXPECT_EQ(context_of(*s, 1), 0);
}

}  // namespace
}  // namespace gufo::engine
