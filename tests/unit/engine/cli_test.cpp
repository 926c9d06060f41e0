// `gufo run`, `gufo chat` and `gufo bench` as a user runs them: streamed output, same seed same text,
// --validate-prefill, one-line errors; chat over piped stdin, and Ctrl-C (SIGINT) stopping an
// answer without ending the chat.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Output {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class GenerationCli : public ::testing::Test {
 protected:
  static fs::path& dir() {
    static fs::path path = fs::temp_directory_path() / ("gufo_cli_" + std::to_string(::getpid()));
    return path;
  }
  static void SetUpTestSuite() {
    fs::create_directories(dir());
    const fs::path models = fs::path(GUFO_TEST_DATA_DIR) / "models";
    for (const char* name : {"tiny-qwen3", "tiny-llama"}) {
      const std::string command = std::string(GUFO_BINARY) + " convert '" + (models / name).string() + "' -o '" +
                                  (dir() / (std::string(name) + ".gguf")).string() + "' --outtype f32 2>/dev/null";
      ASSERT_EQ(std::system(command.c_str()), 0) << command;
    }
  }
  static void TearDownTestSuite() { fs::remove_all(dir()); }

  static std::string model(const char* name) { return (dir() / (std::string(name) + ".gguf")).string(); }

  // Runs `gufo ARGS` with `input` on stdin.
  static Output gufo(const std::string& args, const std::string& input = "") {
    const fs::path in = dir() / "stdin.txt";
    std::ofstream(in, std::ios::binary) << input;
    const std::string command = std::string(GUFO_BINARY) + " " + args + " <" + in.string() + " >" +
                                (dir() / "out.txt").string() + " 2>" + (dir() / "err.txt").string();
    const int status = std::system(command.c_str());
    Output result;
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    result.out = slurp(dir() / "out.txt");
    result.err = slurp(dir() / "err.txt");
    return result;
  }
};

// Lines of stderr, not counting the notice that --device auto fell back to the CPU (a CUDA
// build on a machine without a GPU says so once; it is not part of the error).
int lines(const std::string& text) {
  int n = 0;
  size_t start = 0;
  for (size_t end = text.find('\n'); end != std::string::npos; start = end + 1, end = text.find('\n', start)) {
    if (text.substr(start, end - start).find(": using the CPU: ") == std::string::npos) ++n;
  }
  return n;
}

TEST_F(GenerationCli, RunStreamsAndIsDeterministicBySeed) {
  const std::string args = "run -m " + model("tiny-qwen3") + " -p 'Hello world' -n 12 --temp 0.9 --seed 42";
  const Output first = gufo(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_GT(first.out.size(), 1u);
  EXPECT_EQ(gufo(args).out, first.out);
  const Output other = gufo("run -m " + model("tiny-qwen3") + " -p 'Hello world' -n 12 --temp 0.9 --seed 43");
  EXPECT_NE(other.out, first.out);
}

TEST_F(GenerationCli, RunValidatePrefillReportsEveryPosition) {
  const Output result = gufo("run -m " + model("tiny-llama") + " -p 'one two three four' -n 2 --validate-prefill");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("validate-prefill: ok"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("pos    1"), std::string::npos) << result.err;
}

TEST_F(GenerationCli, RunBadInputIsOneLine) {
  for (const std::string& args : {"run -m " + (dir() / "missing.gguf").string() + " -p hi",
                                  "run -m " + model("tiny-qwen3") + " -p hi --cache-type q4",
                                  "run -m " + model("tiny-qwen3") + " -p '" + std::string(400, 'z') + "' -c 64",
                                  "run -m " + model("tiny-qwen3") + " -p hi -c 9999999"}) {
    SCOPED_TRACE(args);
    const Output result = gufo(args);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines(result.err), 1) << result.err;
  }
  // A context beyond the model's training context is refused, not silently shortened.
  const Output beyond = gufo("run -m " + model("tiny-qwen3") + " -p hi -c 9999999");
  EXPECT_NE(beyond.err.find("-c/--ctx 9999999 is beyond the model's training context"), std::string::npos)
      << beyond.err;
}

TEST_F(GenerationCli, RunGrammarAllowsOnlyWhatItMatches) {
  // The tiny random model writes anything; the grammar leaves it three words and a period.
  std::ofstream(dir() / "answer.gbnf") << "root ::= \"Answer: \" (\"yes\" | \"no\" | \"maybe\") \".\"\n";
  for (const char* seed : {"1", "2", "3", "4"}) {
    const Output result = gufo("run -m " + model("tiny-qwen3") + " -p 'Hello world' -n 40 --temp 1.5 --seed " + seed +
                               " --grammar " + (dir() / "answer.gbnf").string());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_TRUE(result.out == "Answer: yes.\n" || result.out == "Answer: no.\n" || result.out == "Answer: maybe.\n")
        << result.out;  // run ends its text with a newline
  }
  // Too few tokens for the grammar: it stops at the limit with what it has, a prefix.
  const Output cut =
      gufo("run -m " + model("tiny-qwen3") + " -p 'Hello' -n 1 --temp 0 --grammar " + (dir() / "answer.gbnf").string());
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  ASSERT_TRUE(cut.out.ends_with("\n")) << cut.out;
  const std::string text = cut.out.substr(0, cut.out.size() - 1);
  EXPECT_FALSE(text.empty());
  EXPECT_TRUE(std::string("Answer: yes.").starts_with(text) || std::string("Answer: no.").starts_with(text) ||
              std::string("Answer: maybe.").starts_with(text))
      << text;
  EXPECT_FALSE(text.ends_with(".")) << text;  // cut short by -n 1: no token spells it all
  std::ofstream(dir() / "bad.gbnf") << "root ::= answer\n";
  for (const std::string& path : {(dir() / "bad.gbnf").string(), (dir() / "none.gbnf").string()}) {
    const Output bad = gufo("run -m " + model("tiny-qwen3") + " -p hi --grammar " + path);
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
    EXPECT_NE(bad.err.find(path + ": "), std::string::npos) << bad.err;
  }
}

TEST_F(GenerationCli, RunJsonSchemaGivesJsonTheSchemaAccepts) {
  std::ofstream(dir() / "answer.json") << R"({"type": "object", "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"], "additionalProperties": false})";
  for (const char* seed : {"1", "2"}) {
    const Output result = gufo("run -m " + model("tiny-qwen3") + " -p 'Hello world' -n 40 --temp 1.5 --seed " + seed +
                               " --json-schema " + (dir() / "answer.json").string());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    // The only whitespace a model can add is bounded: strip it and one answer is left.
    std::string compact;
    for (const char c : result.out) {
      if (c != ' ' && c != '\n' && c != '\t') compact += c;
    }
    EXPECT_TRUE(compact == R"({"ok":true})" || compact == R"({"ok":false})") << result.out;
  }
  std::ofstream(dir() / "bad.json") << R"({"type": "array", "uniqueItems": true})";
  std::ofstream(dir() / "broken.json") << "{";
  for (const char* name : {"bad.json", "broken.json", "none.json"}) {
    const std::string path = (dir() / name).string();
    const Output bad = gufo("run -m " + model("tiny-qwen3") + " -p hi --json-schema " + path);
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
    EXPECT_NE(bad.err.find(path + ": "), std::string::npos) << bad.err;
  }
  const Output both = gufo("run -m " + model("tiny-qwen3") + " -p hi --json-schema " +
                           (dir() / "answer.json").string() + " --grammar " + (dir() / "answer.json").string());
  EXPECT_EQ(both.exit_code, 2) << both.err;
  EXPECT_NE(both.err.find("excludes"), std::string::npos) << both.err;
}

TEST_F(GenerationCli, NumericFlagsOutOfRangeAreUsageErrorsNamingTheFlag) {
  const std::string run = "run -m " + model("tiny-qwen3") + " -p hi ";
  const std::string chat = "chat -m " + model("tiny-qwen3") + " ";
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {run + "--top-p 0", "--top-p"},
           {run + "--top-k -3", "--top-k"},
           {run + "-n -5", "--n-predict"},
           {run + "--temp -1", "--temp"},
           {run + "--min-p 1.5", "--min-p"},
           {run + "--repeat-penalty 0", "--repeat-penalty"},
           {run + "--presence-penalty 3", "--presence-penalty"},
           {run + "--repeat-last-n -2", "--repeat-last-n"},
           {run + "--seed x", "--seed"},
           {run + "--draft-max 0", "--draft-max"},
           {run + "--draft-min 65", "--draft-min"},
           {run + "--draft-min 5 --draft-max 4", "--draft-min"},
           {chat + "--draft-min 9", "--draft-min"},
           {run + "--spec draft", "--spec"},
           {run + "--spec ngram --draft-model " + model("tiny-qwen3"), "--draft-model"},
           {chat + "--draft-model " + model("missing"), "--draft-model"},
           {chat + "--spec x", "--spec"},
           {chat + "-n -7", "--n-predict"},
           {chat + "-c 0", "--ctx"}}) {
    SCOPED_TRACE(args);
    const Output result = gufo(args);
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_EQ(lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(flag), std::string::npos) << result.err;
  }
}

TEST_F(GenerationCli, RunSpecNgramWritesTheSameTextAndSaysHowManyDraftsWereKept) {
  const std::string args = "run -m " + std::string(GUFO_TEST_DATA_DIR) +
                           "/../../models/gufo-tiny-q8_0.gguf -p 'The cat sat on the mat. The cat sat on the mat. "
                           "The cat sat on the' -n 48 --temp 0";
  const Output plain = gufo(args + " --spec none");
  const Output spec = gufo(args + " --spec ngram --draft-max 4");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_EQ(plain.err.find("speculative"), std::string::npos) << plain.err;
  EXPECT_NE(spec.err.find("gufo run: speculative: "), std::string::npos) << spec.err;
  EXPECT_NE(spec.err.find(" drafted tokens accepted ("), std::string::npos) << spec.err;
}

TEST_F(GenerationCli, RunDraftModelWritesTheSameTextAndRefusesAnotherVocabulary) {
  const std::string models = std::string(GUFO_TEST_DATA_DIR) + "/../../models/";
  const std::string args = "run -m " + models + "gufo-tiny-q8_0.gguf -p 'Once upon a time' -n 40 --temp 0";
  const Output plain = gufo(args);
  const Output spec = gufo(args + " --draft-model " + models + "gufo-tiny-draft-q8_0.gguf --draft-min 4");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  ASSERT_EQ(spec.exit_code, 0) << spec.err;
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_NE(spec.err.find("gufo run: speculative: "), std::string::npos) << spec.err;
  const std::string chat = "chat -m " + models + "gufo-tiny-q8_0.gguf --temp 0 -n 24";
  const Output chat_plain = gufo(chat, "Tell me a story\nAnd another\n");
  const Output chat_spec = gufo(chat + " --draft-model " + models + "gufo-tiny-draft-q8_0.gguf --draft-min 2",
                                "Tell me a story\nAnd another\n");
  ASSERT_EQ(chat_spec.exit_code, 0) << chat_spec.err;
  EXPECT_EQ(chat_spec.out, chat_plain.out);
  const Output other = gufo(args + " --draft-model " + model("tiny-qwen3"));
  EXPECT_EQ(other.exit_code, 1) << other.err;
  EXPECT_EQ(lines(other.err), 1) << other.err;
  EXPECT_NE(other.err.find("--draft-model " + model("tiny-qwen3") + ": the draft model's vocabulary has "),
            std::string::npos)
      << other.err;
}

// A run saved with --session and continued from it writes what the run that never stopped
// writes (sampled: the generator is saved too); files it cannot continue are one-line errors
// and are left as they were.
TEST_F(GenerationCli, RunSessionContinuesWhereTheSavedRunStopped) {
  const std::string run = "run -m " + std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf";
  const std::string file = (dir() / "story.session").string();
  const Output whole = gufo(run + " -p 'Once upon a time' -n 30 --temp 0.8 --seed 5");
  const Output first = gufo(run + " -p 'Once upon a time' -n 12 --temp 0.8 --seed 5 --session " + file);
  const Output rest = gufo(run + " -n 18 --temp 0.8 --session " + file);
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(rest.exit_code, 0) << rest.err;
  ASSERT_FALSE(first.out.empty());
  EXPECT_EQ(first.out.substr(0, first.out.size() - 1) + rest.out, whole.out);  // less run's closing newline
  EXPECT_NE(rest.err.find("prompt 1 tokens"), std::string::npos) << rest.err;  // the cache was reused
  const std::string saved = slurp(file);
  const std::vector<std::pair<std::string, std::string>> refused = {
      {run + " -n 4 --session " + file + " --cache-type f32", "(--cache-type)"},
      {run + " -n 4 --session " + file + " -c 16", "the context holds 16 (-c)"},
      {"run -m " + model("tiny-qwen3") + " -n 4 --session " + file, ": a session of another model ("},
      {run + " -n 4 --session " + (dir() / "none.session").string(), "does not exist yet"}};
  for (const auto& [args, expected] : refused) {
    SCOPED_TRACE(args);
    const Output result = gufo(args);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }
  EXPECT_EQ(slurp(file), saved);
  EXPECT_FALSE(fs::exists(dir() / "none.session"));
  // A run that ended (here at a stop string) goes on only from new text; a constrained run is
  // not resumed; without a session, a model that adds BOS still needs -p.
  const std::string ended = (dir() / "ended.session").string();
  const Output stopped = gufo(run + " -p 'Once upon a time' -n 64 --temp 0 --stop ' the' --session " + ended);
  ASSERT_EQ(stopped.exit_code, 0) << stopped.err;
  ASSERT_NE(stopped.err.find("stop: stop"), std::string::npos) << stopped.err;
  for (const auto& [args, expected] : std::vector<std::pair<std::string, std::string>>{
           {run + " -n 4 --session " + ended, "the saved run ended (a stop string); -p gives it text"},
           {run + " -p ' and' -n 4 --session " + ended + " --grammar " + (dir() / "g.gbnf").string(),
            "a constrained run is not resumed"},
           {"run -m " + model("tiny-llama") + " -n 4", "-p: a prompt is needed"}}) {
    SCOPED_TRACE(args);
    std::ofstream(dir() / "g.gbnf") << "root ::= \"a\"\n";
    const Output result = gufo(args);
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_EQ(lines(result.err), 1) << result.err;
    EXPECT_NE(result.err.find(expected), std::string::npos) << result.err;
  }
  const Output appended = gufo(run + " -p ' and then' -n 4 --temp 0 --session " + ended);
  EXPECT_EQ(appended.exit_code, 0) << appended.err;
}

// A chat ended and started again with --session answers the next message as one that went on.
TEST_F(GenerationCli, ChatSessionResumesTheConversation) {
  const std::string chat =
      "chat -m " + std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf --temp 0 -n 24";
  const std::string file = (dir() / "chat.session").string();
  const Output whole = gufo(chat, "Tell me a story\nAnd another\n");
  const Output first = gufo(chat + " --session " + file, "Tell me a story\n");
  const Output second = gufo(chat + " --session " + file, "And another\n");
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(first.out + second.out, whole.out);
  EXPECT_NE(second.err.find("gufo chat: resumed 2 messages from " + file), std::string::npos) << second.err;
  const Output run_file =
      gufo("run -m " + std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf -p hi -n 2 --session " +
           (dir() / "run.session").string());
  ASSERT_EQ(run_file.exit_code, 0) << run_file.err;
  const Output not_chat = gufo(chat + " --session " + (dir() / "run.session").string(), "hello\n");
  EXPECT_EQ(not_chat.exit_code, 1);
  EXPECT_EQ(lines(not_chat.err), 1) << not_chat.err;
  EXPECT_NE(not_chat.err.find("not a chat session"), std::string::npos) << not_chat.err;
  const Output not_run =
      gufo("run -m " + std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf -n 2 --session " + file);
  EXPECT_EQ(not_run.exit_code, 1);
  EXPECT_NE(not_run.err.find("a chat session (gufo chat --session continues it)"), std::string::npos) << not_run.err;
}

TEST_F(GenerationCli, RunDrawsASeedUnlessGivenOnePrintsItAndItRepeatsTheRun) {
  const std::string args =
      "run -m " + model("tiny-qwen3") + " -p 'Hello world' -n 24 --temp 1.5 --top-k 0 --min-p 0 -v";
  const Output first = gufo(args);
  const Output second = gufo(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  const auto seed_of = [](const std::string& err) {
    const size_t at = err.find("gufo run: seed ");
    return at == std::string::npos ? std::string() : err.substr(at + 15, err.find('\n', at) - at - 15);
  };
  ASSERT_FALSE(seed_of(first.err).empty()) << first.err;
  EXPECT_NE(seed_of(first.err), seed_of(second.err));  // 2^-64 odds of a false failure
  const Output again = gufo(args + " --seed " + seed_of(first.err));
  EXPECT_EQ(again.out, first.out);
  EXPECT_EQ(seed_of(again.err), seed_of(first.err));
}

TEST_F(GenerationCli, RunPrintsPromptAndGenerationSpeedAfterTheText) {
  const Output result = gufo("run -m " + model("tiny-qwen3") + " -p 'one two three' -n 5 --temp 0");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const size_t at = result.err.find("gufo run: prompt ");
  ASSERT_NE(at, std::string::npos) << result.err;
  // The prompt's tokens come from the tokenizer; the generated count is what -n allowed.
  EXPECT_NE(result.err.find(" tokens/s); generated ", at), std::string::npos) << result.err;
  EXPECT_TRUE(result.err.find("generated 5 tokens", at) != std::string::npos ||
              result.err.find("stop: eog", at) != std::string::npos)
      << result.err;
}

TEST_F(GenerationCli, ChatAnswersEachLineAndKeepsTheConversation) {
  const std::string args = "chat -m " + model("tiny-qwen3") + " -n 6 --temp 0 --no-thinking";
  const Output one = gufo(args, "hello\n");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const Output two = gufo(args, "hello\nand then?\n");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  // The first answer is the same; the second one follows it.
  ASSERT_GT(two.out.size(), one.out.size());
  EXPECT_EQ(two.out.substr(0, one.out.size()), one.out);
  // /reset forgets the first turn: the second answer is then the answer to a first question.
  const Output reset = gufo(args, "hello\n/reset\nhello\n");
  ASSERT_EQ(reset.exit_code, 0) << reset.err;
  EXPECT_EQ(reset.out, one.out + one.out);
  // A message continued with a backslash is one message.
  const Output joined = gufo(args, "hello\\\nthere\n");
  ASSERT_EQ(joined.exit_code, 0) << joined.err;
}

// gufo bench names the backend it ran on and reports each test's rates; --device is checked.
TEST_F(GenerationCli, BenchReportsTheBackendAndEveryTest) {
  const Output json = gufo("bench -m " + model("tiny-qwen3") + " --device cpu -t 2 -p 8,16 -n 4 -r 2 -o json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json tests = nlohmann::json::parse(json.out);
  ASSERT_EQ(tests.size(), 3u);  // pp8, pp16, tg4
  EXPECT_EQ(tests[0]["test"], "pp8");
  EXPECT_EQ(tests[2]["test"], "tg4");
  for (const auto& t : tests) {
    EXPECT_EQ(t["backend"], "CPU");
    EXPECT_EQ(t["threads"], 2);
    EXPECT_NE(t["device"].get<std::string>().find("cpu ("), std::string::npos);
    ASSERT_EQ(t["tokens_per_s"].size(), 2u);
    for (const auto& rate : t["tokens_per_s"]) EXPECT_GT(rate.get<double>(), 0.0);
  }
  const Output md = gufo("bench -m " + model("tiny-qwen3") + " --device cpu -p 8 -n 0 -r 1");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| CPU |"), std::string::npos) << md.out;
  const Output bad = gufo("bench -m " + model("tiny-qwen3") + " --device tpu -p 8 -n 0 -r 1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.err, "gufo: error: --device tpu: expected cpu, cuda, cuda:N or auto\n");
}

// With --spec the tg test runs the generation loop plainly and with drafts, and says how many
// drafts were kept (on the shipped model's code continuation, most are; --draft-min 2 drafts
// wherever the lookup finds something, whatever the timings say).
TEST_F(GenerationCli, BenchSpecReportsPlainAndDraftedDecodingAndTheDraftsKept) {
  const std::string shipped = std::string(GUFO_TEST_DATA_DIR) + "/../../models/gufo-tiny-q8_0.gguf";
  const Output json =
      gufo("bench -m " + shipped + " --device cpu -t 2 -p 0 -n 32 -d 0,64 -r 1 -o json --spec ngram --draft-min 2");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json tests = nlohmann::json::parse(json.out);
  ASSERT_EQ(tests.size(), 4u);  // tg32 none, tg32 ngram, and both @ d64
  EXPECT_EQ(tests[0]["test"], "tg32 none");
  EXPECT_EQ(tests[1]["test"], "tg32 ngram");
  EXPECT_EQ(tests[3]["test"], "tg32 ngram @ d64");
  for (const auto& t : tests) {
    ASSERT_EQ(t["tokens_per_s"].size(), 1u);
    EXPECT_GT(t["tokens_per_s"][0].get<double>(), 0.0);
    EXPECT_LE(t["accepted"].get<int64_t>(), t["drafted"].get<int64_t>());
  }
  EXPECT_EQ(tests[0]["drafted"], 0);
  EXPECT_GT(tests[1]["accepted"].get<int64_t>(), 8) << tests[1];
  const Output md = gufo("bench -m " + shipped + " --device cpu -p 0 -n 16 -r 1 --spec ngram");
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("| tg16 ngram ("), std::string::npos) << md.out;
  EXPECT_NE(md.out.find(" drafts kept) |"), std::string::npos) << md.out;
}

TEST_F(GenerationCli, ChatBadInputIsOneLine) {
  const Output full = gufo("chat -m " + model("tiny-qwen3") + " -c 16 -n 2", std::string(300, 'q') + "\n");
  EXPECT_EQ(full.exit_code, 1);
  EXPECT_EQ(lines(full.err), 1) << full.err;
  EXPECT_NE(full.err.find("the context only 16"), std::string::npos) << full.err;
  const Output missing = gufo("chat -m " + (dir() / "none.gguf").string(), "hi\n");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(lines(missing.err), 1) << missing.err;
}

// Reads what the child wrote to `fd` until `done(text)` or the deadline; returns the text.
template <class Done>
std::string read_until(int fd, std::string text, Done done, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done(text) && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

TEST_F(GenerationCli, CtrlCStopsTheAnswerNotTheChat) {
  // A 1-layer random qwen3 0.6B: long answers (no EOS in sight, -n -1), fast steps.
  const std::string synth = (dir() / "synth.gguf").string();
  const std::string make = std::string(GUFO_BINARY) + " synth --arch qwen3 --shape 0.6b --type q8_0 --layers 1 " +
                           "--vocab 2048 --quiet -o " + synth;
  ASSERT_EQ(std::system(make.c_str()), 0);

  int to_child[2];
  int from_child[2];
  int err_child[2];
  ASSERT_EQ(::pipe(to_child), 0);
  ASSERT_EQ(::pipe(from_child), 0);
  ASSERT_EQ(::pipe(err_child), 0);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(to_child[0], STDIN_FILENO);
    ::dup2(from_child[1], STDOUT_FILENO);
    ::dup2(err_child[1], STDERR_FILENO);
    for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1], err_child[0], err_child[1]}) ::close(fd);
    ::execl(GUFO_BINARY, GUFO_BINARY, "chat", "-m", synth.c_str(), "-n", "-1", "-c", "30000", "-t", "1",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(to_child[0]);
  ::close(from_child[1]);
  ::close(err_child[1]);
  const auto send = [&](const std::string& line) {
    ASSERT_EQ(::write(to_child[1], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  };
  const auto has_output = [](const std::string& text) { return text.size() >= 8; };
  const auto stopped = [](int count) {
    return [count](const std::string& text) {
      int found = 0;
      for (size_t at = text.find("[answer stopped]"); at != std::string::npos;
           at = text.find("[answer stopped]", at + 1)) {
        ++found;
      }
      return found >= count;
    };
  };

  send("tell me everything\n");
  const std::string first = read_until(from_child[0], "", has_output, std::chrono::seconds(120));
  ASSERT_TRUE(has_output(first)) << "no answer";
  ::kill(pid, SIGINT);
  std::string err = read_until(err_child[0], "", stopped(1), std::chrono::seconds(60));
  ASSERT_TRUE(stopped(1)(err)) << err;

  // The first answer (its end was written before the message on stderr) is all in the pipe.
  read_until(
      from_child[0], "", [](const std::string&) { return false; }, std::chrono::seconds(1));
  // Still alive: the next message gets an answer, which Ctrl-C stops too.
  send("and more\n");
  const std::string second = read_until(from_child[0], "", has_output, std::chrono::seconds(120));
  ASSERT_TRUE(has_output(second)) << "no second answer";
  ::kill(pid, SIGINT);
  err = read_until(err_child[0], err, stopped(2), std::chrono::seconds(60));
  EXPECT_TRUE(stopped(2)(err)) << err;

  ::close(to_child[1]);  // end of input: the chat ends normally
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (::waitpid(pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() < deadline) {
    ::usleep(50'000);
  }
  if (std::chrono::steady_clock::now() >= deadline) ::kill(pid, SIGKILL);
  ::close(from_child[0]);
  ::close(err_child[0]);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by a signal";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
