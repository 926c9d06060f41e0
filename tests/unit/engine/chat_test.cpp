// Chat: a turn reuses the cached prefix and answers exactly what a fresh session answers on
// the whole rendered conversation; cancel ends an answer and the chat goes on; Llama 3's
// template gets one BOS, not two; a conversation larger than the context is an error that
// leaves the conversation as it was.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/chat.h"
#include "engine/model.h"
#include "tests/unit/common/temp_path.h"
#include "tokenizer/tokenizer.h"

namespace gufo::engine {
namespace {

namespace fs = std::filesystem;

// A tiny model converted to f32 once per test process.
std::string tiny_gguf(const std::string& name) {
  const fs::path gguf = testing::process_temp_path("gufo_chat_" + name, ".gguf");
  if (!fs::exists(gguf)) {
    const fs::path dir = fs::path(GUFO_TEST_DATA_DIR) / "models" / name;
    const std::string command = std::string(GUFO_BINARY) + " convert '" + dir.string() + "' -o '" + gguf.string() +
                                "' --outtype f32 2>/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  return gguf.string();
}

struct Loaded {
  cpu::CpuBackend cpu{2};
  std::unique_ptr<Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;

  explicit Loaded(const std::string& name) {
    auto loaded = Model::load(tiny_gguf(name), cpu);
    EXPECT_TRUE(loaded.ok()) << loaded.error().message;
    model = std::move(loaded).value();
    auto t = tokenizer::Tokenizer::load(model->file());
    EXPECT_TRUE(t.ok()) << t.error().message;
    tok = std::make_unique<tokenizer::Tokenizer>(std::move(t).value());
  }

  Chat chat(int64_t n_ctx, int32_t n_predict, std::string system = "", float temperature = 0.0f) {
    auto session = Session::create(*model, cpu, n_ctx, DType::F32);
    EXPECT_TRUE(session.ok());
    ChatOptions options;
    options.system_prompt = std::move(system);
    options.enable_thinking = false;
    options.generate.n_predict = n_predict;
    options.generate.sampler.temperature = temperature;
    options.generate.sampler.seed = 77;
    auto chat = Chat::create(*model, std::move(session).value(), *tok, options);
    EXPECT_TRUE(chat.ok()) << chat.error().message;
    return std::move(chat).value();
  }
};

TEST(Chat, SecondTurnReusesThePrefixAndMatchesAFreshSession) {
  Loaded tiny("tiny-qwen3");
  Chat chat = tiny.chat(256, 6, "You are terse.");
  std::string streamed;
  auto first = chat.reply("Hello there", [&](std::string_view text) { streamed += text; });
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->text, streamed);
  // Stopped by -n: every generated token was evaluated, so the cache holds them all.
  ASSERT_EQ(first->result.reason, StopReason::Length);
  EXPECT_EQ(chat.last_prefill_tokens() + first->result.tokens.size(), chat.cached_tokens().size());
  const size_t cached_after_first = chat.cached_tokens().size();

  auto second = chat.reply("And again?", [](std::string_view) {});
  ASSERT_TRUE(second.ok()) << second.error().message;
  // Only the new part was evaluated: the system prompt and the first question were reused.
  EXPECT_LT(chat.last_prefill_tokens(), chat.cached_tokens().size() - second->result.tokens.size());
  ASSERT_EQ(chat.messages().size(), 5u);  // system, user, assistant, user, assistant
  EXPECT_EQ(chat.messages()[4]["content"], second->text);

  // reset() forgets the turns but keeps the system prompt, so the cache prefix is reused.
  chat.reset();
  ASSERT_EQ(chat.messages().size(), 1u);
  auto again = chat.reply("Hello there", [](std::string_view) {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->result.tokens, first->result.tokens);
  EXPECT_LT(chat.last_prefill_tokens(), cached_after_first);
}

// Sampled answers draw on from where the last answer left off: the same message twice gets
// two different answers (one seed, not re-seeded each turn).
TEST(Chat, EachAnswerDrawsOnFromTheLast) {
  Loaded tiny("tiny-qwen3");
  Chat chat = tiny.chat(256, 12, "", 1.0f);
  auto first = chat.reply("Hello there", [](std::string_view) {});
  ASSERT_TRUE(first.ok());
  chat.reset();
  auto second = chat.reply("Hello there", [](std::string_view) {});
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->result.tokens, second->result.tokens);
}

// A chat saved after a turn and resumed in another session (another system prompt asked for:
// the saved one wins) answers the next message as the chat that never stopped, sampled too;
// a session file of a run is not a chat's.
void expect_resumed_chat_answers_the_same(float temperature) {
  Loaded tiny("tiny-qwen3");
  const std::string path = testing::process_temp_path("chat", ".gufo-session").string();
  const SessionIdentity identity{.model = model_identity(tiny.model->file()), .build = "test"};
  Chat whole = tiny.chat(256, 8, "You are terse.", temperature);
  EXPECT_NE(whole.save(path, identity).error().message.find("nothing to save yet"), std::string::npos);
  ASSERT_TRUE(whole.reply("Hello there", [](std::string_view) {}).ok());
  ASSERT_TRUE(whole.save(path, identity).ok());
  auto expected = whole.reply("And again?", [](std::string_view) {});
  ASSERT_TRUE(expected.ok());

  Chat resumed = tiny.chat(256, 8, "Another system prompt.", temperature);
  const Status restored = resumed.resume(path, identity);
  ASSERT_TRUE(restored.ok()) << restored.error().message;
  ASSERT_EQ(resumed.messages().size(), 3u);
  EXPECT_EQ(resumed.messages()[0]["content"], "You are terse.");
  auto answer = resumed.reply("And again?", [](std::string_view) {});
  ASSERT_TRUE(answer.ok());
  EXPECT_EQ(answer->result.tokens, expected->result.tokens);
  EXPECT_EQ(answer->text, expected->text);
  EXPECT_EQ(resumed.messages(), whole.messages());
  // Only the new message was evaluated: the saved keys and values were reused.
  EXPECT_LT(resumed.last_prefill_tokens(), resumed.cached_tokens().size() / 2);

  auto session = Session::create(*tiny.model, tiny.cpu, 256, DType::F32);
  ASSERT_TRUE(session.ok());
  const std::vector<int32_t> prompt = tiny.tok->encode("Hello", false);
  ASSERT_TRUE(session->eval(prompt, false).ok());
  std::vector<int32_t> tokens = prompt;
  tokens.push_back(prompt[0]);
  ASSERT_TRUE(save_session(path, *session, {.tokens = tokens, .generator = "", .note = ""}, identity).ok());
  Chat other = tiny.chat(256, 8);
  EXPECT_NE(other.resume(path, identity).error().message.find("not a chat session"), std::string::npos);
  EXPECT_TRUE(other.cached_tokens().empty());
}

TEST(Chat, AResumedChatAnswersAsTheChatThatNeverStopped) {
  for (const float temperature : {0.0f, 0.9f}) {
    SCOPED_TRACE(temperature);
    expect_resumed_chat_answers_the_same(temperature);
  }
}

TEST(Chat, PrefixReuseGivesTheSameTokensAsOneColdPrefill) {
  Loaded tiny("tiny-llama");
  Chat warm = tiny.chat(256, 5);
  ASSERT_TRUE(warm.reply("one", [](std::string_view) {}).ok());
  auto warm_second = warm.reply("two", [](std::string_view) {});
  ASSERT_TRUE(warm_second.ok());
  ASSERT_EQ(warm_second->result.reason, StopReason::Length);

  // Cold: the same rendered conversation evaluated in one go on a new session.
  std::vector<int32_t> prompt(
      warm.cached_tokens().begin(),
      warm.cached_tokens().end() - static_cast<std::ptrdiff_t>(warm_second->result.tokens.size()));
  auto session = Session::create(*tiny.model, tiny.cpu, 256, DType::F32);
  ASSERT_TRUE(session.ok());
  GenerateOptions options;
  options.n_predict = 5;
  options.sampler.temperature = 0.0f;
  auto cold = generate(*session, *tiny.tok, prompt, options, [](std::string_view) {});
  ASSERT_TRUE(cold.ok());
  EXPECT_EQ(cold->tokens, warm_second->result.tokens);
}

TEST(Chat, Llama3TemplateGetsOneBos) {
  Loaded tiny("tiny-llama");
  Chat chat = tiny.chat(256, 2);
  ASSERT_TRUE(chat.reply("hi", [](std::string_view) {}).ok());
  const std::vector<int32_t>& tokens = chat.cached_tokens();
  ASSERT_GE(tokens.size(), 2u);
  const int32_t bos = tiny.tok->vocab().bos_id;
  EXPECT_EQ(tokens[0], bos);
  EXPECT_NE(tokens[1], bos);
}

TEST(Chat, CancelEndsTheAnswerAndTheChatGoesOn) {
  Loaded tiny("tiny-qwen3");
  Chat chat = tiny.chat(256, 50);
  std::atomic<bool> cancel{false};
  int pieces = 0;
  auto turn = chat.reply(
      "Tell me a story",
      [&](std::string_view text) {
        if (!text.empty() && ++pieces == 2) cancel = true;
      },
      &cancel);
  ASSERT_TRUE(turn.ok()) << turn.error().message;
  if (turn->result.reason != StopReason::EndOfGeneration) {
    EXPECT_EQ(turn->result.reason, StopReason::Cancelled);
    EXPECT_LT(turn->result.tokens.size(), 50u);
    // Every generated token was evaluated: the cache ends with them.
    const auto& cached = chat.cached_tokens();
    EXPECT_TRUE(std::equal(turn->result.tokens.rbegin(), turn->result.tokens.rend(), cached.rbegin()));
  }
  cancel = false;
  auto next = chat.reply(
      "Go on", [](std::string_view) {}, &cancel);
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(chat.messages().size(), 4u);
}

TEST(Chat, ConversationLongerThanTheContextIsAnErrorAndChangesNothing) {
  Loaded tiny("tiny-qwen3");
  Chat chat = tiny.chat(24, 2);
  auto turn = chat.reply(std::string(200, 'x') + " a long question", [](std::string_view) {});
  ASSERT_FALSE(turn.ok());
  EXPECT_NE(turn.error().message.find("the context only 24"), std::string::npos) << turn.error().message;
  EXPECT_TRUE(chat.messages().empty());
  auto ok = chat.reply("hi", [](std::string_view) {});
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

}  // namespace
}  // namespace gufo::engine
