// Test helpers for the serving engine (engine/scheduler.h): a request's events collected,
// prompts and greedy options made up for the tiny test models, and a fixture that makes
// engines over the tiny Qwen3 (f32 weights and cache).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "engine/request.h"
#include "engine/scheduler.h"
#include "tests/unit/common/tiny_model.h"

namespace gufo::engine::test {

struct Outcome {
  std::vector<std::string> text;
  std::vector<RequestEvent> done;
  std::vector<TokenLogprob> logprobs;
  std::string error;
};

inline Outcome collect(const RequestHandle& handle, size_t n_choices = 1) {
  Outcome out;
  out.text.resize(n_choices);
  while (out.done.size() < n_choices && out.error.empty()) {
    std::optional<RequestEvent> e = handle->next(std::chrono::seconds(30));
    if (!e) {
      out.error = "timed out";
      break;
    }
    if (e->kind == RequestEvent::Kind::Text) {
      out.text[static_cast<size_t>(e->choice)] += e->text;
      out.logprobs.insert(out.logprobs.end(), e->logprobs.begin(), e->logprobs.end());
    } else if (e->kind == RequestEvent::Kind::Done) {
      out.done.push_back(*e);
    } else {
      out.error = e->error;
    }
  }
  return out;
}

inline std::vector<int32_t> prompt_of(int n, int salt) {
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<size_t>(i)] = (i * 31 + salt * 17 + 3) % 250 + 4;
  return t;
}

inline RequestOptions greedy(int32_t max_tokens) {
  RequestOptions o;
  o.max_tokens = max_tokens;
  o.sampler.temperature = 0.0f;
  return o;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(tiny.model, nullptr); }

  std::unique_ptr<Scheduler> make(SchedulerOptions options) {
    options.cache_type = DType::F32;
    auto s = Scheduler::create(*tiny.model, tiny.cpu, *tiny.tokenizer, options);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? std::move(s).value() : nullptr;
  }

  Outcome run_one(Scheduler& s, const std::vector<int32_t>& prompt, RequestOptions o) {
    Submission sub = s.submit(prompt, {o});
    EXPECT_EQ(sub.status, SubmitStatus::Accepted) << sub.message;
    return sub.handle ? collect(sub.handle) : Outcome{};
  }

  gufo::testing::TinyModel tiny{"tiny-qwen3"};
};

}  // namespace gufo::engine::test
