// Picks the next token from logits: repetition / presence / frequency penalties, then top-k,
// top-p, min-p and temperature, then a draw (or greedy at temperature 0), in llama.cpp's
// order. Same seed, same tokens, on every compiler: the generator is std::mt19937_64 (fully
// specified by the standard) with our own uniform conversion, not a std distribution.
// Tested by tests/unit/engine/sampler_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gufo::engine {

struct SamplerParams {
  float temperature = 0.8f;        // <= 0: greedy
  int32_t top_k = 40;              // <= 0: off
  float top_p = 0.95f;             // >= 1: off
  float min_p = 0.05f;             // <= 0: off
  float repeat_penalty = 1.0f;     // 1: off; divides positive logits, multiplies negative ones
  float presence_penalty = 0.0f;   // subtracted once from each token seen
  float frequency_penalty = 0.0f;  // subtracted per occurrence
  int32_t penalty_last_n = 64;     // how many recent tokens the penalties look at
  uint64_t seed = 0;
  // Added to the logits of these token ids before anything else (OpenAI's logit_bias; -100
  // bans a token, +100 all but forces it). Ids outside the vocabulary are ignored.
  std::vector<std::pair<int32_t, float>> logit_bias;
};

// Checks ranges (temperature >= 0, top_p in (0, 1], min_p in [0, 1], penalties finite, ...);
// errors name the parameter.
Status validate(const SamplerParams& params);

class Sampler {
 public:
  explicit Sampler(const SamplerParams& params);
  // The next token for `logits` [n_vocab], given the tokens so far (for the penalties).
  int32_t sample(std::span<const float> logits);
  // Records a token that is now part of the context (prompt tokens and sampled ones).
  void accept(int32_t token);
  // The generator's state as text (the standard's std::mt19937_64 serialization), and a
  // state taken back: a run resumed from a session (engine/session_file.h) draws what the
  // run that never stopped would have drawn.
  std::string generator_state() const;
  Status restore_generator(std::string_view state);

 private:
  double uniform();  // [0, 1)
  // The steps of sample(), in order. candidates_ holds the survivors; `sorted` counts those at
  // its front in descending order (only as many as a filter needed are sorted).
  void load_candidates(std::span<const float> logits);
  void apply_penalties();
  size_t keep_top_k();                              // returns `sorted`
  void keep_top_p(float max_logit, size_t sorted);  // at temperature 1
  void keep_min_p(float max_logit);                 // at temperature 1
  int32_t draw(float max_logit);                    // at the temperature

  SamplerParams params_;
  std::mt19937_64 rng_;
  std::vector<int32_t> history_;
  struct Candidate {
    int32_t id;
    float logit;
  };
  std::vector<Candidate> candidates_;
  std::vector<double> weights_;
};

}  // namespace gufo::engine
