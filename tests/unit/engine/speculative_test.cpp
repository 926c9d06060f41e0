// Speculative decoding: the n-gram drafter proposes what followed the context's latest earlier
// occurrence of its last tokens, the draft model its greedy tokens from a KV cache that follows
// the context; and generation with drafts (of either) gives the same tokens, text, stop reason
// and KV cache length as without, greedy and sampled (seeded, with penalties), under a
// grammar, with stop strings, a full context, a cancel and n_predict at every small value, on the
// shipped dense and MoE models, while drafts are actually accepted; and the draft policy drafts
// where a wider batch is cheap and backs off where it is not.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine/draft_policy.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_draft.h"
#include "engine/ngram_draft.h"
#include "grammar/gbnf.h"
#include "grammar/json_gbnf.h"
#include "tests/unit/common/tiny_model.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramDraft, ProposesWhatFollowedTheLatestEarlierOccurrence) {
  EXPECT_EQ(ngram_draft(Tokens{1, 2, 3, 9, 8, 1, 2, 3}, 3), (Tokens{9, 8, 1}));
  EXPECT_EQ(ngram_draft(Tokens{1, 2, 3, 9, 8, 1, 2, 3}, 1), (Tokens{9}));
  // The latest of two occurrences, and no more tokens than follow it.
  EXPECT_EQ(ngram_draft(Tokens{5, 6, 7, 5, 6, 8, 5, 6}, 8), (Tokens{8, 5, 6}));
  // The longest suffix that occurred wins over a later, shorter one.
  EXPECT_EQ(ngram_draft(Tokens{4, 5, 6, 1, 9, 5, 6, 2, 4, 5, 6}, 1), (Tokens{1}));
  // A repeated token alone is not enough (ngram_min 2), unless asked for.
  EXPECT_EQ(ngram_draft(Tokens{7, 1, 2, 7}, 2), Tokens{});
  EXPECT_EQ(ngram_draft(Tokens{7, 1, 2, 7}, 2, {.ngram_max = 4, .ngram_min = 1}), (Tokens{1, 2}));
  // Nothing seen before, nothing asked for, too little history.
  EXPECT_EQ(ngram_draft(Tokens{1, 2, 3, 4}, 4), Tokens{});
  EXPECT_EQ(ngram_draft(Tokens{1, 2, 1, 2}, 0), Tokens{});
  EXPECT_EQ(ngram_draft(Tokens{1}, 4), Tokens{});
  EXPECT_EQ(ngram_draft(Tokens{}, 4), Tokens{});
  // A run of one token: its continuation overlaps the suffix itself.
  EXPECT_EQ(ngram_draft(Tokens{3, 3, 3}, 4), (Tokens{3}));
}

// Runs `steps` steps of a policy on a machine where an evaluation of 1 + L rows takes `plain` +
// L x `row` seconds and the drafts are kept up to the `kept`-th; returns the lengths chosen.
std::vector<int32_t> steps(DraftPolicy& policy, int steps, double plain, double row, int32_t kept) {
  std::vector<int32_t> lengths;
  for (int i = 0; i < steps; ++i) {
    const int32_t length = policy.next_length();
    lengths.push_back(length);
    policy.record(length, std::min(length, kept), plain + row * length);
  }
  return lengths;
}

int32_t count_of(const std::vector<int32_t>& lengths, int32_t length) {
  return static_cast<int32_t>(std::count(lengths.begin(), lengths.end(), length));
}

TEST(DraftPolicy, DraftsTheMostWhereAWiderBatchCostsLittle) {
  // A GPU's decode: a drafted row adds a thousandth of a step.
  DraftPolicy policy(0, 8);
  const auto lengths = steps(policy, 40, 1e-3, 1e-6, 5);
  EXPECT_TRUE(policy.costs_known());
  // Plain steps only to time them: one cold, two timed, then one after each 8 drafting steps
  // until five are kept (the steady state's), then one in 32.
  EXPECT_LE(count_of(lengths, 0), 6);
  EXPECT_EQ(lengths.back(), 8);
}

TEST(DraftPolicy, BacksOffWhereARowCostsAsMuchAsAStep) {
  // A small model on a few CPU cores: each row costs a whole step, so no draft can pay.
  DraftPolicy policy(0, 8);
  const auto lengths = steps(policy, 300, 1e-3, 1e-3, 8);
  const std::vector<int32_t> late(lengths.begin() + 20, lengths.end());
  // Plain, but for one draft of one token each 64 steps (the drafts are kept: worth a retry).
  EXPECT_EQ(count_of(late, 0) + count_of(late, 1), static_cast<int32_t>(late.size()));
  EXPECT_LE(count_of(late, 1), 5);
}

TEST(DraftPolicy, WithoutRetriesTheTimingsStand) {
  // A draft model's tokens cost the same whatever the text: once its drafts are timed as not
  // paying, even drafts that would all be kept are not tried again.
  DraftPolicy policy(0, 8, /*retry=*/false);
  const auto lengths = steps(policy, 300, 1e-3, 1e-3, 8);
  const std::vector<int32_t> late(lengths.begin() + 20, lengths.end());
  EXPECT_EQ(count_of(late, 0), static_cast<int32_t>(late.size()));
  EXPECT_GT(policy.acceptance(), 0.5);
}

TEST(DraftPolicy, AShortRequestPaysLittleForWhatItLearns) {
  // 64 tokens where a row costs 0.8 of a step and nothing is kept: within 3% of plain decoding.
  DraftPolicy policy(0, 8);
  const auto lengths = steps(policy, 64, 1e-3, 0.8e-3, 0);
  double seconds = 0.0;
  for (const int32_t length : lengths) seconds += 1e-3 + 0.8e-3 * length;
  EXPECT_LE(seconds, 1.03 * 64 * 1e-3);
}

TEST(DraftPolicy, ASlowFirstStepOfALengthDoesNotTurnDraftingOff) {
  // A GPU: the first step of each batch width runs twenty times slower (its graph captured).
  DraftPolicy policy(0, 8);
  std::vector<bool> used(9, false);
  int32_t length = 0;
  for (int i = 0; i < 60; ++i) {
    length = policy.next_length();
    const double seconds = (1e-3 + 1e-6 * length) * (used[static_cast<size_t>(length)] ? 1 : 20);
    used[static_cast<size_t>(length)] = true;
    policy.record(length, length, seconds);
  }
  EXPECT_EQ(length, 8);
}

TEST(DraftPolicy, WeighsWhatIsKeptAgainstWhatARowCosts) {
  // A row at a third of a step pays where nearly every draft is kept, not where few are.
  DraftPolicy kept_most(0, 8);
  EXPECT_GT(steps(kept_most, 40, 1e-3, 3e-4, 64).back(), 2);
  EXPECT_GT(kept_most.acceptance(), 0.9);
  DraftPolicy kept_few(0, 8);
  EXPECT_EQ(steps(kept_few, 40, 1e-3, 3e-4, 0).back(), 0);
  EXPECT_LT(kept_few.acceptance(), 0.25);  // few trials once it backs off: the prior fades slowly
  // The expected tokens of a step: 1 + p + ... + p^L.
  EXPECT_DOUBLE_EQ(kept_few.expected_tokens(0), 1.0);
  const double p = kept_most.acceptance();
  EXPECT_NEAR(kept_most.expected_tokens(2), 1 + p + p * p, 1e-12);
}

TEST(DraftPolicy, FollowsTheTextWhenItTurnsRepetitive) {
  DraftPolicy policy(0, 8);
  EXPECT_EQ(steps(policy, 100, 1e-3, 3e-4, 0).back(), 0);  // free prose: nothing kept, no drafting
  // The text turns repetitive: the plain steps' shadow drafts are kept, and drafting resumes.
  for (int i = 0; i < 30; ++i) policy.record_shadow(true);
  EXPECT_GT(policy.acceptance(), 0.9);
  EXPECT_EQ(steps(policy, 20, 1e-3, 3e-4, 64).back(), 8);
}

TEST(DraftPolicy, TriesLongerDraftsWhereRowsGetCheaperAsTheBatchWidens) {
  // A row costs half a step at one draft, an eighth of one at eight, and nearly every draft is
  // kept: the hopeful guess for lengths not yet timed lets the long ones be tried, and their own
  // timings keep them.
  DraftPolicy policy(0, 8);
  for (int i = 0; i < 30; ++i) policy.record_shadow(true);
  for (int i = 0; i < 30; ++i) {
    const int32_t length = policy.next_length();
    policy.record(length, length, length == 0 ? 1e-3 : length < 8 ? 1e-3 + 0.5e-3 * length : 2e-3);
  }
  EXPECT_EQ(policy.next_length(), 8);
}

TEST(DraftPolicy, ADraftModelsTokensBoundWhatLongerDraftsCost) {
  // A draft model at 0.6 of a target step a token (a small target on 2 CPU cores), a fifth of
  // its drafts kept, and one plain step slowed 3x by the machine: the guess for lengths not yet
  // timed must count the draft model's tokens, or the slow plain step makes every length look
  // free and the policy walks through them all (session 24 measured 0.55x of plain that way).
  DraftPolicy policy(0, 8, /*retry=*/false);
  const double plain = 1e-3, draft_token = 0.6e-3, verify_row = 0.05e-3;
  double seconds = 0.0;
  int plain_steps = 0;
  for (int i = 0; i < 128; ++i) {
    const int32_t length = policy.next_length();
    const double proposing = draft_token * length;
    if (length > 0) policy.record_proposal(length, proposing);
    double step = plain + verify_row * length + proposing;
    if (length == 0 && ++plain_steps == 2) step *= 3;  // the first plain step that counts
    policy.record(length, length > 0 ? static_cast<int32_t>(i % 5 == 0) : 0, step);
    seconds += step;
  }
  EXPECT_LE(seconds, 1.10 * 128 * plain);
  EXPECT_EQ(policy.next_length(), 0);
}

TEST(DraftPolicy, ADraftModelsTokensBoundWhatUntimedLengthsCost) {
  // The machine busy while plain steps are timed (2x), so a drafted row looks free: a length
  // not yet timed must still cost the draft model's tokens, never a plain step alone.
  DraftPolicy policy(0, 8, /*retry=*/false);
  const double plain = 1e-3, draft_token = 0.6e-3, verify_row = 0.05e-3;
  int32_t longest = 0;
  for (int i = 0; i < 64; ++i) {
    const int32_t length = policy.next_length();
    longest = std::max(longest, length);
    if (length > 0) policy.record_proposal(length, draft_token * length);
    const double step = length == 0 ? 2 * plain : plain + (verify_row + draft_token) * length;
    policy.record(length, length > 0 ? static_cast<int32_t>(i % 2 == 0) : 0, step);
  }
  EXPECT_LE(longest, 2);
}

TEST(DraftPolicy, UntimedStepsCountWhatWasKeptButNoCost) {
  // A serving step that also ran prompt rows: its time says nothing of what drafts cost.
  DraftPolicy policy(0, 8);
  for (int i = 0; i < 20; ++i) policy.record_untimed(4, 4);
  EXPECT_GT(policy.acceptance(), 0.9);
  EXPECT_FALSE(policy.costs_known());
  EXPECT_EQ(policy.next_length(), 0);  // plain steps first, to be timed
}

TEST(DraftPolicy, NeverProposesFewerThanDraftMin) {
  DraftPolicy policy(3, 8);
  const auto lengths = steps(policy, 100, 1e-3, 1e-3, 0);
  EXPECT_EQ(*std::min_element(lengths.begin(), lengths.end()), 3);
  EXPECT_GE(count_of(lengths, 3), 95);
}

// A shipped model (models/NAME) with its tokenizer, on the CPU.
struct Shipped : testing::LoadedModel {
  explicit Shipped(const char* name) : LoadedModel(std::string(GUFO_TEST_DATA_DIR) + "/../../models/" + name) {}
};

struct Outcome {
  GenerateResult result;
  std::string text;
  int32_t n_past = 0;
};

// `cancel_after`: cancels once the callback has had that many pieces of text (0: never).
Outcome run(Shipped& shipped, const std::string& prompt, GenerateOptions options, int64_t n_ctx, int cancel_after) {
  Outcome out;
  std::atomic<bool> cancel{false};
  int pieces = 0;
  options.cancel = &cancel;
  auto session = Session::create(*shipped.model, shipped.cpu, n_ctx, DType::F16);
  EXPECT_TRUE(session.ok()) << session.error().message;
  if (!session.ok()) return out;
  const Tokens tokens = shipped.tokenizer->encode(prompt, true);
  auto result = generate(*session, *shipped.tokenizer, tokens, options, [&](std::string_view t) {
    out.text += t;
    if (++pieces == cancel_after) cancel = true;
  });
  EXPECT_TRUE(result.ok()) << result.error().message;
  if (result.ok()) out.result = std::move(result).value();
  out.n_past = session->n_past();
  return out;
}

// Runs `options` without and with drafts (n-gram drafts; with `drafter`, the draft model's);
// everything but the speed must be the same. Returns the drafts accepted.
int64_t expect_same_with_drafts(Shipped& shipped, const std::string& prompt, GenerateOptions options, int64_t n_ctx,
                                const std::string& what, int cancel_after = 0, ModelDrafter* drafter = nullptr) {
  options.spec.mode = SpecMode::None;
  const Outcome plain = run(shipped, prompt, options, n_ctx, cancel_after);
  options.spec.mode = drafter != nullptr ? SpecMode::Draft : SpecMode::Ngram;
  options.spec.drafter = drafter;
  // As drafts are chosen by default (by what they cost here: plain steps, shadow drafts and
  // drafts mixed as the timings fall), then every draft the drafter finds (the same drafts each
  // run, whatever they cost).
  const Outcome chosen = run(shipped, prompt, options, n_ctx, cancel_after);
  EXPECT_EQ(chosen.result.tokens, plain.result.tokens) << what << " (drafts chosen by cost)";
  EXPECT_EQ(chosen.text, plain.text) << what << " (drafts chosen by cost)";
  EXPECT_EQ(chosen.n_past, plain.n_past) << what << " (drafts chosen by cost)";
  options.spec.draft_min = options.spec.draft_max;
  const Outcome spec = run(shipped, prompt, options, n_ctx, cancel_after);
  EXPECT_EQ(spec.result.tokens, plain.result.tokens) << what;
  EXPECT_EQ(spec.text, plain.text) << what;
  EXPECT_EQ(spec.result.reason, plain.result.reason) << what;
  EXPECT_EQ(spec.n_past, plain.n_past) << what << ": the KV cache must hold what it holds without drafts";
  EXPECT_EQ(plain.result.drafted, 0) << what;
  EXPECT_LE(spec.result.accepted, spec.result.drafted) << what;
  return spec.result.accepted;
}

const char* const kRepetitive[] = {
    "The cat sat on the mat. The cat sat on the mat. The cat sat on the",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n\ndef mul(a, b):\n",
    "Once upon a time",
};

TEST(Speculative, NgramDraftsChangeNothingButSpeedOnTheShippedModels) {
  for (const char* name : {"gufo-tiny-q8_0.gguf", "gufo-tiny-moe-q8_0.gguf"}) {
    Shipped shipped(name);
    ASSERT_NE(shipped.model, nullptr);
    int64_t accepted = 0;
    for (const char* prompt : kRepetitive) {
      for (const float temperature : {0.0f, 0.8f}) {
        GenerateOptions options;
        options.n_predict = 64;
        options.sampler.temperature = temperature;
        options.sampler.seed = 11;
        options.sampler.repeat_penalty = temperature > 0 ? 1.1f : 1.0f;
        const std::string what = std::string(name) + " temp " + std::to_string(temperature) + ": " + prompt;
        accepted += expect_same_with_drafts(shipped, prompt, options, 512, what);
      }
    }
    EXPECT_GT(accepted, 20) << name << ": drafts were never kept, so nothing was checked";
  }
}

TEST(Speculative, EveryWayOfEndingIsTheSame) {
  Shipped shipped("gufo-tiny-q8_0.gguf");
  ASSERT_NE(shipped.model, nullptr);
  const std::string prompt = kRepetitive[0];
  int64_t accepted = 0;
  // n_predict at every small value: the last token is never a kept draft.
  for (int32_t n = 1; n <= 8; ++n) {
    GenerateOptions options;
    options.n_predict = n;
    options.sampler.temperature = 0;
    accepted += expect_same_with_drafts(shipped, prompt, options, 512, "n_predict " + std::to_string(n));
  }
  // A full context, at every room left after the prompt.
  const auto n_prompt = static_cast<int64_t>(shipped.tokenizer->encode(prompt, true).size());
  for (int64_t room = 1; room <= 6; ++room) {
    GenerateOptions options;
    options.n_predict = -1;
    options.sampler.temperature = 0;
    accepted +=
        expect_same_with_drafts(shipped, prompt, options, n_prompt + room, "context room " + std::to_string(room));
  }
  // Cancelled after every number of tokens, inside runs of kept drafts or not.
  for (int pieces = 1; pieces <= 30; ++pieces) {
    GenerateOptions options;
    options.n_predict = 32;
    options.sampler.temperature = 0;
    accepted +=
        expect_same_with_drafts(shipped, prompt, options, 512, "cancelled after " + std::to_string(pieces), pieces);
  }
  // A stop string inside a run of kept drafts, and a draft length of one.
  for (const int32_t draft_max : {1, 8}) {
    GenerateOptions options;
    options.n_predict = 48;
    options.sampler.temperature = 0;
    options.spec.draft_max = draft_max;
    options.stop = {"cat sat on the mat. The cat"};
    accepted += expect_same_with_drafts(shipped, prompt + " mat. The cat sat on the", options, 512,
                                        "a stop string, draft_max " + std::to_string(draft_max));
  }
  EXPECT_GT(accepted, 10);
}

TEST(Speculative, UnderAGrammarTheDraftsAreDrawnThroughTheMask) {
  Shipped shipped("gufo-tiny-q8_0.gguf");
  ASSERT_NE(shipped.model, nullptr);
  auto grammar = grammar::parse_gbnf(grammar::kJsonObjectGbnf);
  ASSERT_TRUE(grammar.ok()) << grammar.error().message;
  GenerateOptions options;
  options.n_predict = 64;
  options.sampler.temperature = 0;
  options.grammar = std::make_shared<const grammar::Grammar>(std::move(grammar).value());
  expect_same_with_drafts(shipped, R"({"a": "b", "c": "d", "e": "f", )", options, 512, "JSON object grammar");
}

// gufo-tiny with the draft model shipped for it (models/README.md), which keeps 15-40% of its
// drafts on these prompts: every run is the target's alone, greedy and sampled, and every way
// of ending; one drafter serves all the runs, following each new context lazily.
TEST(Speculative, DraftModelChangesNothingButSpeed) {
  Shipped shipped("gufo-tiny-q8_0.gguf");
  Shipped draft("gufo-tiny-draft-q8_0.gguf");
  ASSERT_NE(shipped.model, nullptr);
  ASSERT_NE(draft.model, nullptr);
  ASSERT_TRUE(check_draft_vocab(shipped.tokenizer->vocab(), draft.tokenizer->vocab(), "draft").ok());
  auto draft_session = Session::create(*draft.model, draft.cpu, 512, DType::F16);
  ASSERT_TRUE(draft_session.ok()) << draft_session.error().message;
  ModelDrafter drafter(*draft_session);
  int64_t accepted = 0;
  for (const char* prompt : {kRepetitive[0], kRepetitive[1], kRepetitive[2], "Alice was beginning to get very tired"}) {
    for (const float temperature : {0.0f, 0.8f}) {
      GenerateOptions options;
      options.n_predict = 48;
      options.sampler.temperature = temperature;
      options.sampler.seed = 5;
      const std::string what = "draft model, temp " + std::to_string(temperature) + ": " + prompt;
      accepted += expect_same_with_drafts(shipped, prompt, options, 512, what, 0, &drafter);
    }
  }
  EXPECT_GT(accepted, 20) << "drafts were never kept, so nothing was checked";
  const std::string prompt = kRepetitive[0];
  for (int32_t n = 1; n <= 4; ++n) {
    GenerateOptions options;
    options.n_predict = n;
    options.sampler.temperature = 0;
    expect_same_with_drafts(shipped, prompt, options, 512, "draft model, n_predict " + std::to_string(n), 0, &drafter);
  }
  const auto n_prompt = static_cast<int64_t>(shipped.tokenizer->encode(prompt, true).size());
  for (int64_t room = 1; room <= 4; ++room) {
    GenerateOptions options;
    options.n_predict = -1;
    options.sampler.temperature = 0;
    expect_same_with_drafts(shipped, prompt, options, n_prompt + room, "draft model, room " + std::to_string(room), 0,
                            &drafter);
  }
  for (int pieces : {1, 5, 13}) {
    GenerateOptions options;
    options.n_predict = 32;
    options.sampler.temperature = 0;
    expect_same_with_drafts(shipped, prompt, options, 512, "draft model, cancelled after " + std::to_string(pieces),
                            pieces, &drafter);
  }
}

// The draft's KV cache follows whatever history it is given: proposals after a history that
// shares only a prefix with the last one are those of a fresh drafter, and it holds the
// history and all but the last proposal; near the end of its context it proposes fewer.
TEST(ModelDrafter, FollowsTheHistoryLazilyAndStopsAtItsContext) {
  Shipped draft("gufo-tiny-draft-q8_0.gguf");
  ASSERT_NE(draft.model, nullptr);
  const Tokens first = draft.tokenizer->encode("The cat sat on the mat. The dog", true);
  const Tokens second = draft.tokenizer->encode("The cat sat on a chair, and then", true);
  auto session = Session::create(*draft.model, draft.cpu, 64, DType::F16);
  ASSERT_TRUE(session.ok());
  ModelDrafter drafter(*session);
  auto a = drafter.propose(first, 5);
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->size(), 5u);
  EXPECT_EQ(session->n_past(), static_cast<int32_t>(first.size()) + 4);
  auto b = drafter.propose(second, 3);
  ASSERT_TRUE(b.ok());
  auto fresh_session = Session::create(*draft.model, draft.cpu, 64, DType::F16);
  ASSERT_TRUE(fresh_session.ok());
  ModelDrafter fresh(*fresh_session);
  auto expected = fresh.propose(second, 3);
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(*b, *expected);
  EXPECT_EQ(session->n_past(), static_cast<int32_t>(second.size()) + 2);
  // The same history again, one token longer: the cached part is not evaluated again.
  Tokens longer = second;
  longer.push_back((*b)[0]);
  auto c = drafter.propose(longer, 2);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[0], (*b)[1]) << "greedy, batch-invariant: the same continuation";
  EXPECT_EQ(session->n_past(), static_cast<int32_t>(longer.size()) + 1);
  // A context of 16 positions: history + all but the last proposal must fit.
  auto small_session = Session::create(*draft.model, draft.cpu, 16, DType::F16);
  ASSERT_TRUE(small_session.ok());
  ModelDrafter small(*small_session);
  Tokens history(14, first[1]);
  for (const auto& [size, count] : std::vector<std::pair<size_t, size_t>>{{14, 3}, {16, 1}, {17, 0}}) {
    history.resize(size, first[1]);
    auto proposed = small.propose(history, 8);
    ASSERT_TRUE(proposed.ok()) << proposed.error().message;
    EXPECT_EQ(proposed->size(), count) << size << " tokens of history";
  }
}

TEST(ModelDrafter, RefusesAnotherVocabulary) {
  Shipped shipped("gufo-tiny-q8_0.gguf");
  ASSERT_NE(shipped.model, nullptr);
  const tokenizer::Vocab& target = shipped.tokenizer->vocab();
  tokenizer::Vocab other = target;
  other.tokens.pop_back();
  Status status = check_draft_vocab(target, other, "d.gguf");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message, "d.gguf: the draft model's vocabulary has " + std::to_string(other.n_vocab()) +
                                        " tokens, the model's " + std::to_string(target.n_vocab()) +
                                        ": a draft model must share it");
  other = target;
  other.tokens[300] += "x";
  status = check_draft_vocab(target, other, "d.gguf");
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().message,
            "d.gguf: token 300 differs from the model's: a draft model must share its vocabulary");
  other = target;
  other.eos_id = target.eos_id + 1;
  EXPECT_FALSE(check_draft_vocab(target, other, "d.gguf").ok());
  EXPECT_TRUE(check_draft_vocab(target, target, "d.gguf").ok());
}

TEST(Speculative, DraftLengthsOutOfRangeAreErrors) {
  Shipped shipped("gufo-tiny-q8_0.gguf");
  ASSERT_NE(shipped.model, nullptr);
  auto session = Session::create(*shipped.model, shipped.cpu, 64, DType::F16);
  ASSERT_TRUE(session.ok());
  GenerateOptions options;
  options.spec.mode = SpecMode::Ngram;
  options.spec.draft_max = 0;
  const Tokens prompt = {1, 2, 3};
  auto result = generate(*session, *shipped.tokenizer, prompt, options, [](std::string_view) {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "generate: draft_max must be at least 1");
  options.spec.draft_max = 4;
  options.spec.draft_min = 5;
  result = generate(*session, *shipped.tokenizer, prompt, options, [](std::string_view) {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "generate: draft_min must be from 0 to draft_max");
  options.spec.draft_min = 0;
  options.spec.mode = SpecMode::Draft;
  result = generate(*session, *shipped.tokenizer, prompt, options, [](std::string_view) {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().message, "generate: speculative decoding with a draft model needs the draft model");
}

}  // namespace
}  // namespace gufo::engine
