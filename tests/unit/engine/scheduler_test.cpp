// The continuous-batching engine on a tiny converted model (f32 weights and cache): one
// request gives what engine::generate gives on a plain session; many concurrent requests
// (chunked prompts, mixed prefill and decode steps) each give what they give alone; a
// repeated prompt reuses cached blocks and gives the same text; a pool too small for all
// sequences preempts and recomputes without changing any output; cancel frees the blocks;
// a full queue refuses; log-probabilities are consistent; n choices stream apart.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/generate.h"
#include "engine/scheduler.h"
#include "tests/unit/common/tiny_model.h"
#include "tests/unit/engine/requests.h"

namespace gufo::engine {
namespace {

using namespace std::chrono_literals;
using namespace test;

using SchedulerTest = EngineTest;

TEST_F(SchedulerTest, OneRequestGivesWhatGenerateGives) {
  const std::vector<int32_t> prompt = prompt_of(11, 1);
  auto session = Session::create(*tiny.model, tiny.cpu, 128, DType::F32);
  ASSERT_TRUE(session.ok());
  GenerateOptions g;
  g.n_predict = 16;
  g.sampler.temperature = 0.0f;
  std::string want;
  auto result = generate(*session, *tiny.tokenizer, prompt, g, [&](std::string_view t) { want += t; });
  ASSERT_TRUE(result.ok());

  auto s = make({.n_parallel = 2, .n_ctx = 128});
  const Outcome got = run_one(*s, prompt, greedy(16));
  ASSERT_TRUE(got.error.empty()) << got.error;
  EXPECT_EQ(got.text[0], want);
  ASSERT_EQ(got.done.size(), 1u);
  EXPECT_EQ(got.done[0].prompt_tokens, 11);
  EXPECT_EQ(got.done[0].completion_tokens, static_cast<int32_t>(result->tokens.size()));
}

TEST_F(SchedulerTest, ConcurrentRequestsEachGiveWhatTheyGiveAlone) {
  const std::vector<int> lengths = {3, 40, 17, 9, 33, 5, 26};
  std::vector<std::string> alone;
  {
    auto s = make({.n_parallel = 1, .n_ctx = 128, .block_size = 4, .step_tokens = 16});
    for (size_t i = 0; i < lengths.size(); ++i) {
      alone.push_back(run_one(*s, prompt_of(lengths[i], static_cast<int>(i)), greedy(20)).text[0]);
    }
  }
  auto s = make({.n_parallel = 4, .n_ctx = 128, .block_size = 4, .step_tokens = 16, .prefix_cache = false});
  std::vector<RequestHandle> handles;
  for (size_t i = 0; i < lengths.size(); ++i) {
    Submission sub = s->submit(prompt_of(lengths[i], static_cast<int>(i)), {greedy(20)});
    ASSERT_EQ(sub.status, SubmitStatus::Accepted) << sub.message;
    handles.push_back(sub.handle);
  }
  for (size_t i = 0; i < handles.size(); ++i) {
    const Outcome got = collect(handles[i]);
    ASSERT_TRUE(got.error.empty()) << got.error;
    EXPECT_EQ(got.text[0], alone[i]) << "request " << i;
  }
  const EngineStats stats = s->stats();
  EXPECT_EQ(stats.requests_ok, lengths.size());
  EXPECT_EQ(stats.kv_blocks_used, 0);
}

TEST_F(SchedulerTest, ALongPromptIsNotStarvedByRunningDecodes) {
  // A budget of 16 tokens per step, two sequences decoding: a 40-token prompt still gets
  // segments of 14 beside their two decode rows, and finishes long before they do.
  auto s = make({.n_parallel = 3, .n_ctx = 128, .block_size = 4, .step_tokens = 16});
  Submission a = s->submit(prompt_of(5, 1), {greedy(80)});
  Submission b = s->submit(prompt_of(5, 2), {greedy(80)});
  ASSERT_TRUE(a.handle->next(10s).has_value());
  ASSERT_TRUE(b.handle->next(10s).has_value());
  const Outcome c = run_one(*s, prompt_of(40, 3), greedy(5));
  ASSERT_TRUE(c.error.empty()) << c.error;
  EXPECT_EQ(c.done[0].completion_tokens, 5);
  EXPECT_EQ(s->stats().running, 2);  // a and b are still decoding
  a.handle->cancel();
  b.handle->cancel();
  collect(a.handle);
  collect(b.handle);
}

TEST_F(SchedulerTest, RepeatedPromptReusesCachedBlocksWithTheSameOutput) {
  auto s = make({.n_parallel = 2, .n_ctx = 128, .block_size = 4});
  const std::vector<int32_t> prompt = prompt_of(30, 7);
  const Outcome first = run_one(*s, prompt, greedy(12));
  const Outcome second = run_one(*s, prompt, greedy(12));
  ASSERT_EQ(first.done.size(), 1u);
  ASSERT_EQ(second.done.size(), 1u);
  EXPECT_EQ(first.done[0].cached_tokens, 0);
  EXPECT_EQ(second.done[0].cached_tokens, 28);  // whole blocks, leaving the last token to evaluate
  EXPECT_EQ(second.text[0], first.text[0]);
  // A longer prompt that starts the same way (the next turn of a chat) reuses the blocks too.
  std::vector<int32_t> longer = prompt;
  longer.insert(longer.end(), {9, 8, 7, 6, 5});
  const Outcome third = run_one(*s, longer, greedy(4));
  EXPECT_GE(third.done[0].cached_tokens, 28);
  // The same prompt with the cache turned off for the request: nothing reused, same output.
  RequestOptions uncached = greedy(12);
  uncached.use_prefix_cache = false;
  const Outcome fourth = run_one(*s, prompt, uncached);
  EXPECT_EQ(fourth.done[0].cached_tokens, 0);
  EXPECT_EQ(fourth.text[0], first.text[0]);
  EXPECT_GT(s->stats().cached_prompt_tokens, 0u);
}

TEST_F(SchedulerTest, AShortPromptSentAgainEvaluatesOnlyItsLastToken) {
  // Shorter than a block, one token a request (a keep-alive client's loop): the first
  // request's partial block is taken over by the next, which evaluates one token.
  auto s = make({.n_parallel = 1, .n_ctx = 64, .block_size = 16});
  const std::vector<int32_t> prompt = prompt_of(6, 3);
  const Outcome first = run_one(*s, prompt, greedy(1));
  ASSERT_TRUE(first.error.empty()) << first.error;
  EXPECT_EQ(first.done[0].cached_tokens, 0);
  for (int i = 0; i < 3; ++i) {
    const Outcome again = run_one(*s, prompt, greedy(1));
    EXPECT_EQ(again.done[0].cached_tokens, 5) << "request " << i + 2;
    EXPECT_EQ(again.text[0], first.text[0]);
  }
  // A prompt that parts from it after two tokens reuses those two, and still answers as a
  // fresh engine does.
  std::vector<int32_t> other = prompt;
  other[2] += 1;
  const Outcome parted = run_one(*s, other, greedy(4));
  EXPECT_EQ(parted.done[0].cached_tokens, 2);
  auto fresh = make({.n_parallel = 1, .n_ctx = 64, .block_size = 16});
  EXPECT_EQ(parted.text[0], run_one(*fresh, other, greedy(4)).text[0]);
}

TEST_F(SchedulerTest, SmallPoolPreemptsAndRecomputesWithoutChangingOutputs) {
  std::vector<std::string> alone;
  {
    auto s = make({.n_parallel = 1, .n_ctx = 64, .block_size = 4, .prefix_cache = false});
    for (int i = 0; i < 3; ++i) alone.push_back(run_one(*s, prompt_of(20, 20 + i), greedy(30)).text[0]);
  }
  // 64 positions in all for three sequences that each grow to 50.
  auto s = make({.n_parallel = 3, .n_ctx = 64, .kv_tokens = 64, .block_size = 4, .prefix_cache = false});
  std::vector<RequestHandle> handles;
  for (int i = 0; i < 3; ++i) handles.push_back(s->submit(prompt_of(20, 20 + i), {greedy(30)}).handle);
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(handles[static_cast<size_t>(i)], nullptr);
    const Outcome got = collect(handles[static_cast<size_t>(i)]);
    ASSERT_TRUE(got.error.empty()) << got.error;
    EXPECT_EQ(got.text[0], alone[static_cast<size_t>(i)]) << "request " << i;
    EXPECT_EQ(got.done[0].completion_tokens, 30);
  }
  EXPECT_GT(s->stats().preemptions, 0u);
}

// A prompt that repeats itself (so the lookup finds drafts in it), and the options of a
// request that drafts: at least draft_min tokens wherever the lookup finds them, so that the
// verification runs whatever the timings.
std::vector<int32_t> repeating_prompt(int salt) {
  std::vector<int32_t> t;
  for (int i = 0; i < 4; ++i) {
    const std::vector<int32_t> part = prompt_of(7, salt);
    t.insert(t.end(), part.begin(), part.end());
  }
  return t;
}

RequestOptions drafting(RequestOptions o, int32_t draft_min = 2, int32_t draft_max = 6) {
  o.spec = {.mode = SpecMode::Ngram, .draft_max = draft_max, .draft_min = draft_min};
  return o;
}

RequestOptions sampled(int32_t max_tokens, uint64_t seed) {
  RequestOptions o;
  o.max_tokens = max_tokens;
  o.sampler.temperature = 0.9f;
  o.sampler.seed = seed;
  return o;
}

TEST_F(SchedulerTest, DraftsChangeNothingButSpeedAloneAndInABatch) {
  // Greedy and sampled requests, with log-probabilities, a stop string and the context's end,
  // alone without drafts and then all at once with them, in a step budget and a pool so small
  // that the drafts are cut by both.
  std::vector<std::vector<int32_t>> prompts;
  std::vector<RequestOptions> options;
  for (int i = 0; i < 6; ++i) {
    prompts.push_back(i % 2 == 0 ? repeating_prompt(i) : prompt_of(9 + i, i));
    options.push_back(i % 3 == 2 ? sampled(40, 7 + static_cast<uint64_t>(i)) : greedy(40));
  }
  options[1].top_logprobs = 2;
  options[3].max_tokens = 200;  // runs into the end of the context
  std::vector<Outcome> alone;
  {
    auto s = make({.n_parallel = 1, .n_ctx = 96, .block_size = 4});
    for (size_t i = 0; i < prompts.size(); ++i) alone.push_back(run_one(*s, prompts[i], options[i]));
  }
  const std::string& text0 = alone[0].text[0];
  ASSERT_GE(text0.size(), 8u);
  options[0].stop = {text0.substr(text0.size() / 2, 3)};
  alone[0] = [&] {
    auto s = make({.n_parallel = 1, .n_ctx = 96, .block_size = 4});
    return run_one(*s, prompts[0], options[0]);
  }();

  EXPECT_EQ(alone[3].done[0].reason, StopReason::ContextFull);
  EXPECT_EQ(alone[0].done[0].reason, StopReason::StopString);
  // Drafts wherever the lookup finds them (draft_min 2), then as the policy decides (0; its
  // timings differ run to run, its output may not). A pool of 50 blocks of 4 for four
  // sequences of up to 96 positions: drafts find no free block at times.
  for (const int32_t draft_min : {2, 0}) {
    auto s = make({.n_parallel = 4, .n_ctx = 96, .kv_tokens = 200, .block_size = 4, .step_tokens = 24});
    std::vector<RequestHandle> handles;
    for (size_t i = 0; i < prompts.size(); ++i) {
      const Submission sub = s->submit(prompts[i], {drafting(options[i], draft_min, 6)});
      ASSERT_EQ(sub.status, SubmitStatus::Accepted) << sub.message;
      handles.push_back(sub.handle);
    }
    int32_t drafted = 0, accepted = 0;
    for (size_t i = 0; i < handles.size(); ++i) {
      const Outcome got = collect(handles[i]);
      ASSERT_TRUE(got.error.empty()) << got.error;
      ASSERT_EQ(got.done.size(), 1u);
      const std::string what = "request " + std::to_string(i) + ", draft_min " + std::to_string(draft_min);
      EXPECT_EQ(got.text[0], alone[i].text[0]) << what;
      EXPECT_EQ(got.done[0].reason, alone[i].done[0].reason) << what;
      EXPECT_EQ(got.done[0].completion_tokens, alone[i].done[0].completion_tokens) << what;
      EXPECT_EQ(got.done[0].stop_string, alone[i].done[0].stop_string) << what;
      ASSERT_EQ(got.logprobs.size(), alone[i].logprobs.size()) << what;
      for (size_t t = 0; t < got.logprobs.size(); ++t) {
        EXPECT_EQ(got.logprobs[t].token, alone[i].logprobs[t].token);
        EXPECT_FLOAT_EQ(got.logprobs[t].logprob, alone[i].logprobs[t].logprob);
      }
      EXPECT_LE(got.done[0].accepted_tokens, got.done[0].drafted_tokens);
      drafted += got.done[0].drafted_tokens;
      accepted += got.done[0].accepted_tokens;
    }
    if (draft_min > 0) {
      EXPECT_GT(drafted, 20);
      EXPECT_GT(accepted, 5);
    }
    const EngineStats stats = s->stats();
    EXPECT_EQ(stats.drafted_tokens, static_cast<uint64_t>(drafted));
    EXPECT_EQ(stats.accepted_tokens, static_cast<uint64_t>(accepted));
    EXPECT_EQ(stats.kv_blocks_used, 0);
  }
}

TEST_F(SchedulerTest, DraftsAfterAPreemptionChangeNothing) {
  // 64 positions for three sequences that each grow to 50: preempted and recomputed while
  // they draft; the prefix cache (on) must never hold a draft that was not kept. With a step
  // budget of 3 a recomputation runs one row at a time, and such a row is no decode row to
  // draft after.
  std::vector<std::string> alone;
  {
    auto s = make({.n_parallel = 1, .n_ctx = 64, .block_size = 4});
    for (int i = 0; i < 3; ++i) alone.push_back(run_one(*s, repeating_prompt(30 + i), greedy(22)).text[0]);
  }
  for (const int32_t step_tokens : {512, 3}) {
    auto s = make({.n_parallel = 3, .n_ctx = 64, .kv_tokens = 64, .block_size = 4, .step_tokens = step_tokens});
    for (int round = 0; round < 2; ++round) {  // the second meets the first's cached blocks
      std::vector<RequestHandle> handles;
      for (int i = 0; i < 3; ++i) {
        handles.push_back(s->submit(repeating_prompt(30 + i), {drafting(greedy(22))}).handle);
      }
      for (int i = 0; i < 3; ++i) {
        ASSERT_NE(handles[static_cast<size_t>(i)], nullptr);
        const Outcome got = collect(handles[static_cast<size_t>(i)]);
        ASSERT_TRUE(got.error.empty()) << got.error;
        EXPECT_EQ(got.text[0], alone[static_cast<size_t>(i)])
            << "step budget " << step_tokens << ", round " << round << ", request " << i;
      }
    }
    EXPECT_GT(s->stats().preemptions, 0u) << "step budget " << step_tokens;
    EXPECT_GT(s->stats().drafted_tokens, 0u) << "step budget " << step_tokens;
    EXPECT_EQ(s->stats().kv_blocks_used, 0);
  }
}

TEST_F(SchedulerTest, RefusesADraftModelAndDraftLengthsOutOfRange) {
  auto s = make({.n_parallel = 1, .n_ctx = 64});
  RequestOptions by_model = greedy(4);
  by_model.spec.mode = SpecMode::Draft;
  const Submission a = s->submit(prompt_of(8, 1), {by_model});
  EXPECT_EQ(a.status, SubmitStatus::Invalid);
  EXPECT_NE(a.message.find("draft model"), std::string::npos) << a.message;
  const Submission b = s->submit(prompt_of(8, 1), {drafting(greedy(4), 0, 0)});
  EXPECT_EQ(b.status, SubmitStatus::Invalid);
  EXPECT_NE(b.message.find("draft_max"), std::string::npos) << b.message;
  const Submission c = s->submit(prompt_of(8, 1), {drafting(greedy(4), 5, 4)});
  EXPECT_EQ(c.status, SubmitStatus::Invalid);
  EXPECT_NE(c.message.find("draft_min"), std::string::npos) << c.message;
  const Submission d = s->submit(prompt_of(8, 1), {drafting(greedy(4), 0, kMaxDraftTokens + 1)});
  EXPECT_EQ(d.status, SubmitStatus::Invalid);
}

TEST_F(SchedulerTest, CancelEndsTheRequestAndFreesItsBlocks) {
  auto s = make({.n_parallel = 2, .n_ctx = 256, .block_size = 4});
  RequestOptions o = greedy(200);
  Submission sub = s->submit(prompt_of(10, 3), {o});
  ASSERT_EQ(sub.status, SubmitStatus::Accepted);
  std::optional<RequestEvent> first;
  do {
    first = sub.handle->next(10s);
    ASSERT_TRUE(first.has_value());
  } while (first->kind != RequestEvent::Kind::Text);
  sub.handle->cancel();
  const Outcome rest = collect(sub.handle);
  ASSERT_EQ(rest.done.size(), 1u);
  EXPECT_EQ(rest.done[0].reason, StopReason::Cancelled);
  EXPECT_LT(rest.done[0].completion_tokens, 200);
  EXPECT_EQ(s->stats().kv_blocks_used, 0);
  EXPECT_EQ(s->stats().requests_cancelled, 1u);
}

TEST_F(SchedulerTest, RefusesWhenTheQueueIsFullOrThePromptTooLong) {
  auto s = make({.n_parallel = 1, .n_ctx = 64, .max_queue = 1});
  const Submission a = s->submit(prompt_of(8, 1), {greedy(50)});
  const Submission b = s->submit(prompt_of(8, 2), {greedy(50)});
  const Submission c = s->submit(prompt_of(8, 3), {greedy(50)});
  EXPECT_EQ(a.status, SubmitStatus::Accepted);
  EXPECT_EQ(b.status, SubmitStatus::Accepted);
  EXPECT_EQ(c.status, SubmitStatus::QueueFull);
  EXPECT_NE(c.message.find("busy"), std::string::npos);
  const Submission too_long = s->submit(prompt_of(64, 4), {greedy(1)});
  EXPECT_EQ(too_long.status, SubmitStatus::TooLong);
  EXPECT_NE(too_long.message.find("64 tokens"), std::string::npos) << too_long.message;
  a.handle->cancel();
  b.handle->cancel();
  EXPECT_EQ(collect(a.handle).done.size(), 1u);
  EXPECT_EQ(collect(b.handle).done.size(), 1u);
}

TEST_F(SchedulerTest, LogprobsAreNormalizedAndMostProbableFirst) {
  auto s = make({.n_parallel = 1, .n_ctx = 64});
  RequestOptions o = greedy(6);
  o.top_logprobs = 5;
  const Outcome got = run_one(*s, prompt_of(6, 9), o);
  ASSERT_EQ(got.logprobs.size(), 6u);
  for (const TokenLogprob& lp : got.logprobs) {
    ASSERT_EQ(lp.top.size(), 5u);
    EXPECT_LE(lp.logprob, 0.0f);
    EXPECT_EQ(lp.top[0].first, lp.token);  // greedy picks the most probable token
    EXPECT_FLOAT_EQ(lp.top[0].second, lp.logprob);
    double mass = 0.0;
    for (size_t i = 0; i < lp.top.size(); ++i) {
      mass += std::exp(lp.top[i].second);
      if (i > 0) {
        EXPECT_GE(lp.top[i - 1].second, lp.top[i].second);
      }
    }
    EXPECT_LE(mass, 1.0 + 1e-5);
  }
}

TEST_F(SchedulerTest, ChoicesStreamApartAndStopAtStopStrings) {
  auto s = make({.n_parallel = 4, .n_ctx = 128});
  std::vector<RequestOptions> choices(3);
  for (size_t i = 0; i < choices.size(); ++i) {
    choices[i].max_tokens = 10;
    choices[i].sampler.temperature = 1.0f;
    choices[i].sampler.top_k = 0;
    choices[i].sampler.top_p = 1.0f;
    choices[i].sampler.min_p = 0.0f;
    choices[i].sampler.seed = 100 + i;
  }
  Submission sub = s->submit(prompt_of(5, 5), choices);
  ASSERT_EQ(sub.status, SubmitStatus::Accepted);
  const Outcome got = collect(sub.handle, 3);
  ASSERT_EQ(got.done.size(), 3u);
  EXPECT_FALSE(got.text[0] == got.text[1] && got.text[1] == got.text[2]);
  // The same seed again gives the same text.
  Submission again = s->submit(prompt_of(5, 5), {choices[1]});
  EXPECT_EQ(collect(again.handle).text[0], got.text[1]);

  // A stop string taken from greedy output ends the text right before it.
  const std::string full = run_one(*s, prompt_of(12, 6), greedy(16)).text[0];
  ASSERT_GE(full.size(), 6u);
  RequestOptions stopping = greedy(16);
  stopping.stop = {full.substr(3, 3)};
  const Outcome cut = run_one(*s, prompt_of(12, 6), stopping);
  EXPECT_EQ(cut.text[0], full.substr(0, full.find(stopping.stop[0])));
  EXPECT_EQ(cut.done[0].reason, StopReason::StopString);
  EXPECT_EQ(cut.done[0].stop_string, stopping.stop[0]);
  EXPECT_EQ(got.done[0].stop_string, "");
}

}  // namespace
}  // namespace gufo::engine

namespace gufo::engine {
namespace {

// Another backend's work under a name of its own; the tests' backends below change one thing.
class ForwardingBackend : public backend::Backend {
 public:
  explicit ForwardingBackend(backend::Backend& inner) : inner_(inner) {}
  backend::Capabilities capabilities() const override { return inner_.capabilities(); }
  backend::MemoryInfo memory() const override { return inner_.memory(); }
  bool supports(const model::Node& node) const override { return inner_.supports(node); }
  Status prepare_weights(const model::Graph& graph) override { return inner_.prepare_weights(graph); }
  Result<std::unique_ptr<backend::KvCache>> create_kv_cache(const backend::KvCacheSpec& spec) override {
    return inner_.create_kv_cache(spec);
  }
  Status forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache,
                 const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) override {
    return inner_.forward(graph, batch, cache, outputs, tap);
  }

 protected:
  backend::Backend& inner_;
};

// A backend that fails its forward calls from the `fail_from`-th on with an error of `kind`
// (the CPU backend does the work otherwise), as a device that runs out of memory or is lost.
class FailingBackend final : public ForwardingBackend {
 public:
  FailingBackend(backend::Backend& inner, int fail_from, ErrorKind kind)
      : ForwardingBackend(inner), fail_from_(fail_from), kind_(kind) {}
  std::string_view name() const override { return "failing"; }
  Status forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache,
                 const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) override {
    if (++calls_ >= fail_from_ && !recovered_) {
      if (kind_ != ErrorKind::DeviceLost) recovered_ = true;  // a one-off failure
      return Error{"injected failure", kind_};
    }
    return inner_.forward(graph, batch, cache, outputs, tap);
  }

 private:
  int fail_from_;
  ErrorKind kind_;
  int calls_ = 0;
  bool recovered_ = false;
};

// The CPU backend, reported as a device with `free` bytes of memory free.
class DeviceMemoryBackend final : public ForwardingBackend {
 public:
  DeviceMemoryBackend(backend::Backend& inner, uint64_t free) : ForwardingBackend(inner), free_(free) {}
  std::string_view name() const override { return "device-memory"; }
  backend::Capabilities capabilities() const override {
    backend::Capabilities c = inner_.capabilities();
    c.device_memory = true;
    return c;
  }
  backend::MemoryInfo memory() const override { return {.free_bytes = free_, .total_bytes = 2 * free_}; }

 private:
  uint64_t free_;
};

TEST(SchedulerPool, ADeviceSharedByModelsGivesEachItsShareOfTheFreeMemory) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  // A little past the 512 MiB reserve, so that the pools stay small.
  DeviceMemoryBackend device(tiny.cpu, (uint64_t{512} << 20) + (uint64_t{24} << 20));
  const auto pool = [&](double share, uint64_t kept) -> int64_t {
    auto s = Scheduler::create(
        *tiny.model, device, *tiny.tokenizer,
        {.n_parallel = 2, .n_ctx = 64, .kv_tokens = 0, .kv_memory_share = share, .kv_memory_kept = kept});
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? (*s)->options().kv_tokens : -1;
  };
  const int64_t whole = pool(1.0, 0), quarter = pool(0.25, 0);
  EXPECT_GT(quarter, 4 * 64) << "a quarter still holds several contexts";
  EXPECT_NEAR(static_cast<double>(quarter), static_cast<double>(whole) / 4, 2.0);
  // Room kept for models still to load comes off first: half of the 24 MiB kept, about half
  // the pool; all of it kept, one context (the least a pool holds).
  EXPECT_NEAR(static_cast<double>(pool(1.0, uint64_t{12} << 20)), static_cast<double>(whole) / 2,
              static_cast<double>(whole) / 8);
  EXPECT_EQ(pool(1.0, uint64_t{64} << 20), 64);
  for (double bad : {0.0, -0.5, 1.5}) {
    auto s = Scheduler::create(*tiny.model, device, *tiny.tokenizer, {.n_ctx = 64, .kv_memory_share = bad});
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("share of device memory"), std::string::npos) << s.error().message;
  }
}

// A backend whose forward calls wait while it is closed (the CPU backend does the work), so
// that a test can look at the scheduler while a step is in flight.
class GatedBackend final : public ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  std::string_view name() const override { return "gated"; }
  Status forward(const model::Graph& graph, const backend::Batch& batch, backend::KvCache& cache,
                 const backend::ForwardOutputs& outputs, const backend::NodeTap* tap) override {
    {
      std::unique_lock lock(mutex_);
      ++entered_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
    }
    return inner_.forward(graph, batch, cache, outputs, tap);
  }
  void close() {
    std::lock_guard lock(mutex_);
    open_ = false;
    entered_ = 0;
  }
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  void wait_entered() {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return entered_ > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int entered_ = 0;
  bool open_ = true;
};

TEST(SchedulerStats, ARequestCountsAsWaitingFromItsSubmission) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  GatedBackend gated(tiny.cpu);
  auto s = Scheduler::create(*tiny.model, gated, *tiny.tokenizer, {.n_parallel = 2, .n_ctx = 64});
  ASSERT_TRUE(s.ok()) << s.error().message;
  gated.close();
  Submission first = (*s)->submit(prompt_of(5, 1), {greedy(2)});
  ASSERT_EQ(first.status, SubmitStatus::Accepted);
  gated.wait_entered();  // the loop is inside the first request's step
  Submission second = (*s)->submit(prompt_of(5, 2), {greedy(2)});
  ASSERT_EQ(second.status, SubmitStatus::Accepted);
  const EngineStats stats = (*s)->stats();
  EXPECT_EQ(stats.running, 1);
  EXPECT_EQ(stats.waiting, 1) << "a drain that reads these counts would miss the second request";
  gated.open();
  EXPECT_TRUE(collect(first.handle).error.empty());
  EXPECT_TRUE(collect(second.handle).error.empty());
}

TEST(SchedulerFailures, AFailedStepFailsItsSequencesAndTheEngineGoesOn) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  FailingBackend failing(tiny.cpu, 3, ErrorKind::OutOfMemory);
  auto s = Scheduler::create(*tiny.model, failing, *tiny.tokenizer, {.n_parallel = 2, .n_ctx = 64});
  ASSERT_TRUE(s.ok()) << s.error().message;
  Submission first = (*s)->submit(prompt_of(5, 1), {greedy(8)});
  ASSERT_EQ(first.status, SubmitStatus::Accepted);
  const Outcome failed = collect(first.handle);
  EXPECT_NE(failed.error.find("injected failure"), std::string::npos) << failed.error;
  // The next request runs normally.
  Submission second = (*s)->submit(prompt_of(5, 2), {greedy(4)});
  ASSERT_EQ(second.status, SubmitStatus::Accepted) << second.message;
  const Outcome ok = collect(second.handle);
  EXPECT_TRUE(ok.error.empty()) << ok.error;
  ASSERT_EQ(ok.done.size(), 1u);
  EXPECT_EQ(ok.done[0].completion_tokens, 4);
}

TEST(SchedulerFailures, ALostDeviceFailsEveryRequestAndRefusesNewOnes) {
  testing::TinyModel tiny("tiny-qwen3");
  ASSERT_NE(tiny.model, nullptr);
  FailingBackend failing(tiny.cpu, 2, ErrorKind::DeviceLost);
  auto s = Scheduler::create(
      *tiny.model, failing, *tiny.tokenizer,
      {.n_parallel = 1, .n_ctx = 64, .kv_tokens = 0, .block_size = 16, .step_tokens = 512, .max_queue = 8});
  ASSERT_TRUE(s.ok()) << s.error().message;
  // One runs, one waits for the single slot: the loss fails both.
  Submission running = (*s)->submit(prompt_of(5, 1), {greedy(16)});
  Submission waiting = (*s)->submit(prompt_of(5, 2), {greedy(16)});
  ASSERT_EQ(running.status, SubmitStatus::Accepted);
  ASSERT_EQ(waiting.status, SubmitStatus::Accepted);
  EXPECT_NE(collect(running.handle).error.find("the device failed: injected failure"), std::string::npos);
  EXPECT_NE(collect(waiting.handle).error.find("the device failed"), std::string::npos);
  const Submission after = (*s)->submit(prompt_of(5, 3), {greedy(4)});
  EXPECT_EQ(after.status, SubmitStatus::DeviceLost);
  EXPECT_NE(after.message.find("the device failed"), std::string::npos) << after.message;
}

}  // namespace
}  // namespace gufo::engine
