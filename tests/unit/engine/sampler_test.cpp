// Sampler: greedy is argmax, a seed fixes the draw, each filter keeps what it should, the
// penalties move the logits they should, and draws follow the softmax distribution.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "engine/sampler.h"

namespace gufo::engine {
namespace {

SamplerParams plain(float temperature, uint64_t seed) {
  SamplerParams p;
  p.temperature = temperature;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.seed = seed;
  return p;
}

TEST(Sampler, GreedyIsArgmaxWithLowestIdOnTies) {
  Sampler sampler(plain(0.0f, 1));
  EXPECT_EQ(sampler.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}), 1);
  EXPECT_EQ(sampler.sample(std::vector<float>{5.0f, 1.0f, 5.0f}), 0);
}

TEST(Sampler, LogitBiasBansAndForcesTokens) {
  SamplerParams p = plain(0.0f, 1);
  p.logit_bias = {{1, -100.0f}, {99, 100.0f}};  // an id past the vocabulary is ignored
  Sampler banned(p);
  EXPECT_EQ(banned.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}), 3);
  p.logit_bias = {{2, 100.0f}};
  Sampler forced(p);
  EXPECT_EQ(forced.sample(std::vector<float>{0.1f, 3.0f, -1.0f, 2.9f}), 2);
  p.logit_bias = {{2, NAN}};
  EXPECT_FALSE(validate(p).ok());
}

TEST(Sampler, SameSeedSameTokensOtherSeedOtherTokens) {
  const std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.05f, 0.95f, 1.0f};
  auto draw = [&](uint64_t seed) {
    Sampler sampler(plain(1.0f, seed));
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(sampler.sample(logits));
    return out;
  };
  EXPECT_EQ(draw(42), draw(42));
  EXPECT_NE(draw(42), draw(43));
}

// A generator taken from one sampler and restored in another (another seed) draws on as the
// first does; garbage is refused and leaves the generator as it was.
TEST(Sampler, ARestoredGeneratorDrawsOnAsTheOriginal) {
  const std::vector<float> logits = {1.0f, 1.1f, 0.9f, 1.05f, 0.95f, 1.0f};
  Sampler original(plain(1.0f, 42));
  for (int i = 0; i < 10; ++i) original.sample(logits);
  Sampler resumed(plain(1.0f, 7));
  ASSERT_TRUE(resumed.restore_generator(original.generator_state()).ok());
  for (int i = 0; i < 64; ++i) ASSERT_EQ(resumed.sample(logits), original.sample(logits)) << i;
  const std::string before = resumed.generator_state();
  EXPECT_FALSE(resumed.restore_generator("12 34 not a state").ok());
  EXPECT_FALSE(resumed.restore_generator(before + " 99").ok());
  EXPECT_EQ(resumed.generator_state(), before);
}

TEST(Sampler, DrawsFollowTheSoftmax) {
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // p = 1/4, 3/4
  Sampler sampler(plain(1.0f, 7));
  int ones = 0;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ones += sampler.sample(logits);
  EXPECT_NEAR(static_cast<double>(ones) / n, 0.75, 0.015);  // ~5 standard deviations
}

TEST(Sampler, TopKTopPMinPKeepOnlyTheHead) {
  const std::vector<float> logits = {5.0f, 4.0f, 0.0f, -1.0f, 4.5f};
  SamplerParams top_k = plain(5.0f, 3);  // hot, so everything kept would show up
  top_k.top_k = 2;
  SamplerParams top_p = plain(5.0f, 3);
  top_p.top_p = 0.5f;  // the first token alone has p > 0.5 at temperature 1
  SamplerParams min_p = plain(5.0f, 3);
  min_p.min_p = 0.5f;  // keeps tokens with p >= half the top one's: 0 and 4
  std::map<int32_t, int> seen_k, seen_p, seen_m;
  Sampler a(top_k), b(top_p), c(min_p);
  for (int i = 0; i < 2000; ++i) {
    ++seen_k[a.sample(logits)];
    ++seen_p[b.sample(logits)];
    ++seen_m[c.sample(logits)];
  }
  EXPECT_EQ(seen_k.size(), 2u);
  EXPECT_TRUE(seen_k.count(0) && seen_k.count(4));
  EXPECT_EQ(seen_p.size(), 1u);
  EXPECT_TRUE(seen_p.count(0));
  EXPECT_EQ(seen_m.size(), 2u);
  EXPECT_TRUE(seen_m.count(0) && seen_m.count(4));
}

TEST(Sampler, PenaltiesPushSeenTokensDown) {
  SamplerParams p = plain(0.0f, 1);
  p.repeat_penalty = 2.0f;
  Sampler repeat(p);
  repeat.accept(0);
  EXPECT_EQ(repeat.sample(std::vector<float>{3.0f, 2.0f}), 1);  // 3 / 2 < 2

  SamplerParams q = plain(0.0f, 1);
  q.frequency_penalty = 0.6f;
  Sampler frequency(q);
  frequency.accept(0);
  EXPECT_EQ(frequency.sample(std::vector<float>{3.0f, 2.0f}), 0);  // 3 - 0.6 > 2
  frequency.accept(0);
  EXPECT_EQ(frequency.sample(std::vector<float>{3.0f, 2.0f}), 1);  // 3 - 1.2 < 2

  SamplerParams r = plain(0.0f, 1);
  r.presence_penalty = 1.5f;
  r.penalty_last_n = 1;
  Sampler presence(r);
  presence.accept(0);
  presence.accept(1);  // only the last token counts
  EXPECT_EQ(presence.sample(std::vector<float>{3.0f, 2.0f}), 0);
}

TEST(Sampler, ValidateNamesTheParameter) {
  SamplerParams p;
  p.top_p = 0.0f;
  EXPECT_NE(validate(p).error().message.find("top_p"), std::string::npos);
  p = SamplerParams{};
  p.temperature = -1.0f;
  EXPECT_NE(validate(p).error().message.find("temperature"), std::string::npos);
  EXPECT_TRUE(validate(SamplerParams{}).ok());
}

}  // namespace
}  // namespace gufo::engine
