// Session files (engine/session_file.h) on the shipped gufo-tiny, on the CPU: a run saved
// partway and resumed from its file gives, token for token, what the run that never stopped
// gives (greedy and sampled), also with a prompt appended and with drafts; a file of another
// model, build, cache type or context, a foreign, truncated or corrupt file are refused with
// the file named and the session left empty; and a save that fails (a full disk, a target that
// cannot be replaced) leaves the previous file as it was.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/fnv1a.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/session_file.h"
#include "tests/unit/common/temp_path.h"
#include "tests/unit/common/tiny_model.h"

namespace gufo::engine {
namespace {

using Tokens = std::vector<int32_t>;
namespace fs = std::filesystem;

struct Shipped : testing::LoadedModel {
  Shipped() : LoadedModel(std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf") {}
  SessionIdentity identity() const { return {.model = model_identity(model->file()), .build = "gufo test CPU"}; }
  Session session(int64_t n_ctx = 256, DType type = DType::F16) {
    auto created = Session::create(*model, cpu, n_ctx, type);
    EXPECT_TRUE(created.ok());
    return std::move(created).value();
  }
};

GenerateOptions options_of(float temperature, int32_t n_predict) {
  GenerateOptions o;
  o.n_predict = n_predict;
  o.sampler.temperature = temperature;
  o.sampler.seed = 1234;
  o.sampler.repeat_penalty = 1.1f;  // the penalties look back over the resumed context too
  return o;
}

Tokens generated(Session& session, Shipped& shipped, std::span<const int32_t> prompt, const GenerateOptions& options,
                 std::string* generator = nullptr) {
  auto result = generate(session, *shipped.tokenizer, prompt, options, [](std::string_view) {});
  EXPECT_TRUE(result.ok()) << result.error().message;
  if (!result.ok()) return {};
  if (generator != nullptr) *generator = result->generator_state;
  return result->tokens;
}

// Runs `first` tokens, saves, resumes in a fresh session from the file with `appended` after
// the saved context, runs `second` more: what the resumed run generated.
Tokens saved_and_resumed(Shipped& shipped, const Tokens& prompt, const Tokens& appended, GenerateOptions options,
                         int32_t first, int32_t second, const std::string& path) {
  Session before = shipped.session();
  options.n_predict = first;
  std::string generator;
  SessionState state{.tokens = prompt, .generator = "", .note = "{\"k\": 1}"};
  const Tokens head = generated(before, shipped, prompt, options, &generator);
  state.tokens.insert(state.tokens.end(), head.begin(), head.end());
  state.generator = generator;
  const Status saved = save_session(path, before, state, shipped.identity());
  EXPECT_TRUE(saved.ok()) << saved.error().message;

  Session after = shipped.session();
  auto loaded = load_session(path, after, shipped.identity());
  EXPECT_TRUE(loaded.ok()) << loaded.error().message;
  if (!loaded.ok()) return {};
  EXPECT_EQ(loaded->state.tokens, state.tokens);
  EXPECT_EQ(loaded->state.note, state.note);
  EXPECT_EQ(after.n_past(), loaded->n_kv);
  const Tokens& context = loaded->state.tokens;
  Tokens rest(context.begin() + loaded->n_kv, context.end());
  rest.insert(rest.end(), appended.begin(), appended.end());
  options.n_predict = second;
  options.earlier = std::span<const int32_t>(context).first(static_cast<size_t>(loaded->n_kv));
  options.generator_state = loaded->state.generator;
  Tokens out = head;
  const Tokens tail = generated(after, shipped, rest, options);
  out.insert(out.end(), tail.begin(), tail.end());
  return out;
}

TEST(SessionFile, AResumedRunContinuesAsTheRunThatNeverStopped) {
  Shipped shipped;
  ASSERT_NE(shipped.model, nullptr);
  const std::string path = testing::process_temp_path("session", ".gufo-session").string();
  const Tokens prompt = shipped.tokenizer->encode("Once upon a time, in a quiet village by the sea,", true);
  for (const float temperature : {0.0f, 0.9f}) {
    for (const SpecMode spec : {SpecMode::None, SpecMode::Ngram}) {
      GenerateOptions options = options_of(temperature, 40);
      options.spec.mode = spec;
      Session whole = shipped.session();
      const Tokens expected = generated(whole, shipped, prompt, options);
      ASSERT_EQ(expected.size(), 40u);
      for (const int32_t first : {1, 17}) {
        EXPECT_EQ(saved_and_resumed(shipped, prompt, {}, options, first, 40 - first, path), expected)
            << "temperature " << temperature << ", spec " << spec_mode_name(spec) << ", saved after " << first;
      }
    }
  }
}

TEST(SessionFile, APromptAppendedToAResumedSessionReusesItsKeysAndValues) {
  Shipped shipped;
  ASSERT_NE(shipped.model, nullptr);
  const std::string path = testing::process_temp_path("session", ".gufo-session").string();
  const Tokens prompt = shipped.tokenizer->encode("The recipe needs flour, eggs and", true);
  const Tokens more = shipped.tokenizer->encode(" Then the baker said", false);
  const GenerateOptions options = options_of(0.0f, 12);
  // Never stopped: 12 tokens, then the appended text and 12 more in the same session.
  Session whole = shipped.session();
  Tokens expected = generated(whole, shipped, prompt, options);
  Tokens context = prompt;
  context.insert(context.end(), expected.begin(), expected.end());
  GenerateOptions next = options;
  next.earlier = std::span<const int32_t>(context).first(static_cast<size_t>(whole.n_past()));
  Tokens rest(context.begin() + whole.n_past(), context.end());
  rest.insert(rest.end(), more.begin(), more.end());
  const Tokens tail = generated(whole, shipped, rest, next);
  expected.insert(expected.end(), tail.begin(), tail.end());
  EXPECT_EQ(saved_and_resumed(shipped, prompt, more, options, 12, 12, path), expected);
}

// A valid session file of `prompt` and a few generated tokens, as bytes.
std::string valid_file(Shipped& shipped, const std::string& path) {
  Session session = shipped.session();
  const Tokens prompt = shipped.tokenizer->encode("Hello there, how are you today? I am fine.", true);
  SessionState state{.tokens = prompt, .generator = "", .note = ""};
  const Tokens head = generated(session, shipped, prompt, options_of(0.0f, 4));
  state.tokens.insert(state.tokens.end(), head.begin(), head.end());
  EXPECT_TRUE(save_session(path, session, state, shipped.identity()).ok());
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// The load fails with `expected` in its message, naming the file, and leaves the session empty.
void expect_refused(Shipped& shipped, const std::string& path, const std::string& expected, Session session,
                    const SessionIdentity& identity) {
  auto loaded = load_session(path, session, identity);
  ASSERT_FALSE(loaded.ok()) << expected;
  EXPECT_NE(loaded.error().message.find(expected), std::string::npos) << loaded.error().message;
  EXPECT_EQ(loaded.error().message.rfind(path, 0), 0u) << loaded.error().message;
  EXPECT_EQ(session.n_past(), 0) << expected;
}

TEST(SessionFile, RefusesAnotherModelBuildCacheOrContextAndBrokenFiles) {
  Shipped shipped;
  ASSERT_NE(shipped.model, nullptr);
  const std::string path = testing::process_temp_path("session", ".gufo-session").string();
  const std::string good = valid_file(shipped, path);
  const SessionIdentity ours = shipped.identity();
  expect_refused(shipped, path, "a session of another model", shipped.session(),
                 {.model = "fnv1a64:0000000000000000", .build = ours.build});
  expect_refused(shipped, path, "saved by gufo test CPU; this is gufo other", shipped.session(),
                 {.model = ours.model, .build = "gufo other"});
  expect_refused(shipped, path, "(--cache-type)", shipped.session(256, DType::F32), ours);
  expect_refused(shipped, path, "the context holds 4 (-c)", shipped.session(4), ours);
  for (const size_t cut : {size_t{0}, size_t{5}, size_t{20}, good.size() / 2, good.size() - 1}) {
    write_bytes(path, good.substr(0, cut));
    expect_refused(shipped, path, cut < 8 ? "not a Gufo session file" : "truncated", shipped.session(), ours);
  }
  std::string flipped = good;
  flipped[good.size() - 100] = static_cast<char>(flipped[good.size() - 100] ^ 0x10);  // inside the values
  write_bytes(path, flipped);
  expect_refused(shipped, path, "corrupt (its checksum does not match)", shipped.session(), ours);
  write_bytes(path, good + "x");
  expect_refused(shipped, path, "bytes after the checksum", shipped.session(), ours);
  write_bytes(path, "GGUF and then some bytes of another kind of file");
  expect_refused(shipped, path, "not a Gufo session file", shipped.session(), ours);
  expect_refused(shipped, path + ".missing", "cannot read the session", shipped.session(), ours);
  // The file is only ever read.
  write_bytes(path, good);
  Session session = shipped.session(4);
  ASSERT_FALSE(load_session(path, session, ours).ok());
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), good);
}

// `bytes` with its last 8 bytes replaced by the checksum of the rest, as save_session writes it.
std::string with_checksum(std::string bytes) {
  bytes.resize(bytes.size() - 8);
  const uint64_t hash = fnv1a_64(std::string_view(bytes));
  bytes.append(reinterpret_cast<const char*>(&hash), sizeof hash);
  return bytes;
}

// Fields a damaged (or crafted) file may hold, each refused before anything of that size is
// allocated or the cache is touched; the checksum is made right, so each field's own check
// is what refuses it.
TEST(SessionFile, RefusesFieldsOutOfRangeEvenWithTheRightChecksum) {
  Shipped shipped;
  ASSERT_NE(shipped.model, nullptr);
  const std::string path = testing::process_temp_path("session", ".gufo-session").string();
  const std::string good = valid_file(shipped, path);
  const SessionIdentity ours = shipped.identity();
  const auto put_u32 = [](std::string bytes, size_t at, uint32_t value) {
    std::memcpy(bytes.data() + at, &value, sizeof value);
    return with_checksum(bytes);
  };
  // magic 8, version 4, then the model's identity: its length.
  write_bytes(path, put_u32(good, 12, 0xfffffff0u));
  expect_refused(shipped, path, "the model's identity of 4294967280 bytes (at most 4096)", shipped.session(), ours);
  write_bytes(path, put_u32(good, 8, 7));
  expect_refused(shipped, path, "session format 7; this gufo reads 1", shipped.session(), ours);
  // After the identity, the build, "F16", two u64: the token count, the tokens, the cached count.
  const size_t tokens_at = 12 + 4 + ours.model.size() + 4 + ours.build.size() + 4 + 3 + 8 + 8;
  uint32_t n_tokens = 0;
  std::memcpy(&n_tokens, good.data() + tokens_at, sizeof n_tokens);
  ASSERT_GT(n_tokens, 2u);
  write_bytes(path, put_u32(good, tokens_at + 4 + 4 * size_t{n_tokens}, n_tokens));
  expect_refused(shipped, path, "cached positions for", shipped.session(), ours);
  write_bytes(path, put_u32(good, tokens_at, 5000));  // more than the context (256) holds
  expect_refused(shipped, path, "5000 tokens; the context holds 256 (-c)", shipped.session(), ours);
  // A generator state that is not one: the file loads, generation refuses it in one line.
  write_bytes(path, good);
  Session session = shipped.session();
  auto loaded = load_session(path, session, ours);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  GenerateOptions options = options_of(0.8f, 4);
  options.generator_state = "not a generator";
  const Tokens rest(loaded->state.tokens.begin() + loaded->n_kv, loaded->state.tokens.end());
  auto result = generate(session, *shipped.tokenizer, rest, options, [](std::string_view) {});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message.find("the sampler's generator state"), std::string::npos);
}

TEST(SessionFile, AFailedSaveLeavesThePreviousFileWhole) {
  Shipped shipped;
  ASSERT_NE(shipped.model, nullptr);
  const std::string path = testing::process_temp_path("session", ".gufo-session").string();
  const std::string good = valid_file(shipped, path);
  Session session = shipped.session();
  const Tokens prompt = shipped.tokenizer->encode("A much longer prompt, so that the new file is larger", true);
  SessionState state{.tokens = prompt, .generator = "", .note = ""};
  const Tokens head = generated(session, shipped, prompt, options_of(0.0f, 8));
  state.tokens.insert(state.tokens.end(), head.begin(), head.end());
  // A full disk: writes past a file size limit fail (EFBIG) as they would with ENOSPC.
  ::signal(SIGXFSZ, SIG_IGN);
  rlimit saved_limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved_limit), 0);
  rlimit small = saved_limit;
  small.rlim_cur = good.size() / 2;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const Status full = save_session(path, session, state, shipped.identity());
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &saved_limit), 0);
  ASSERT_FALSE(full.ok());
  EXPECT_NE(full.error().message.find(path + ": cannot write"), std::string::npos) << full.error().message;
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), good);
  EXPECT_FALSE(fs::exists(path + ".tmp-" + std::to_string(::getpid())));
  // Sessions hold the user's conversation: owner-only.
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  // A target that cannot be replaced (a directory that is not empty); no temporary file is left.
  const fs::path dir = testing::process_temp_path("session_dir");
  fs::create_directories(dir / "inside");
  const Status blocked = save_session(dir.string(), session, state, shipped.identity());
  ASSERT_FALSE(blocked.ok());
  EXPECT_NE(blocked.error().message.find("cannot replace it"), std::string::npos) << blocked.error().message;
  EXPECT_TRUE(fs::is_directory(dir / "inside"));
  for (const auto& entry : fs::directory_iterator(dir.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find("session_dir_" + std::to_string(::getpid()) + ".tmp"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace gufo::engine
