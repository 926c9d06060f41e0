// Runs the real `gufo inspect` (GUFO_BINARY): on every malformed file it must exit 1 with
// nothing on stdout and exactly one line on stderr; on a good file exit 0, in both formats.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_util.h"

namespace gufo::gguf {
namespace {

using testing::data_dir;

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

RunResult run_gufo(const std::string& args) {
  testing::ScratchDir dir;
  const std::string command =
      std::string("'") + GUFO_BINARY + "' " + args + " >'" + dir.file("out") + "' 2>'" + dir.file("err") + "'";
  const int status = std::system(command.c_str());
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  result.out = testing::read_text(dir.path() / "out");
  result.err = testing::read_text(dir.path() / "err");
  return result;
}

std::string quoted(const std::filesystem::path& path) { return "'" + path.string() + "'"; }

TEST(GgufInspectCli, BadFilesGiveOneLineAndExitCode1) {
  const auto expected = testing::bad_expectations();
  ASSERT_FALSE(expected.empty());
  size_t index = 0;
  for (const auto& [name, substring] : expected) {
    // NOTE(test): --json shares the error path; checking it on every 4th file keeps the ASan
    // build of this test (one process per run) well under its time budget.
    const bool also_json = index++ % 4 == 0;
    for (const char* flags : {"", " --json"}) {
      if (flags[0] != 0 && !also_json) continue;
      SCOPED_TRACE(name + flags);
      const RunResult run = run_gufo("inspect " + quoted(data_dir() / "bad" / name) + flags);
      EXPECT_EQ(run.exit_code, 1);
      EXPECT_EQ(run.out, "");
      EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
      EXPECT_EQ(run.err.back(), '\n');
      EXPECT_EQ(run.err.rfind("gufo: error: ", 0), 0u) << run.err;
      EXPECT_NE(run.err.find(substring), std::string::npos) << run.err;
      EXPECT_NE(run.err.find(name), std::string::npos) << run.err;
    }
  }
}

TEST(GgufInspectCli, MissingFileGivesOneLine) {
  const RunResult run = run_gufo("inspect /nonexistent/model.gguf");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "");
  EXPECT_EQ(run.err, "gufo: error: /nonexistent/model.gguf: cannot open: No such file or directory\n");
}

TEST(GgufInspectCli, TextOutput) {
  const RunResult run = run_gufo("inspect " + quoted(data_dir() / "good" / "tiny.gguf"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  for (const char* part : {"GGUF v3", "alignment 32", "10 metadata keys, 3 tensors", "general.architecture", "\"tiny\"",
                           "[10 x string] [\"!\", \"\\\"\", \"#\", \"hello\", \" world\", \"\\n\", "
                           "\"<|end|>\", \"\xc3\xa9t\xc3\xa9\", ...]",
                           "blk.0.ffn_down.weight", "Q8_0", "[64, 2]", "136",
                           "3 tensors, 208 parameters, 424 bytes of tensor data", "F16 1 F32 1 Q8_0 1", "1e-06"}) {
    EXPECT_NE(run.out.find(part), std::string::npos) << "missing: " << part << "\n" << run.out;
  }
}

TEST(GgufInspectCli, JsonOutput) {
  const RunResult run = run_gufo("inspect --json " + quoted(data_dir() / "good" / "tiny.gguf"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  EXPECT_EQ(doc["version"], 3);
  EXPECT_EQ(doc["alignment"], 32);
  EXPECT_EQ(doc["tensor_count"], 3);
  EXPECT_EQ(doc["metadata_count"], 10);
  EXPECT_EQ(doc["file_size_bytes"], std::filesystem::file_size(data_dir() / "good" / "tiny.gguf"));
  const auto& tokens = doc["metadata"][8];
  EXPECT_EQ(tokens["key"], "tokenizer.ggml.tokens");
  EXPECT_EQ(tokens["type"], "array");
  EXPECT_EQ(tokens["element_type"], "string");
  EXPECT_EQ(tokens["length"], 10);
  EXPECT_EQ(tokens["value"][7], "\xc3\xa9t\xc3\xa9");
  EXPECT_EQ(doc["metadata"][0]["value"], "tiny");
  EXPECT_EQ(doc["tensors"][2]["type"], "Q8_0");
  EXPECT_EQ(doc["tensors"][2]["shape"], nlohmann::json::array({64, 2}));
  EXPECT_EQ(doc["tensors"][2]["n_bytes"], 136);
  EXPECT_EQ(doc["totals"]["parameters"], 208);
  EXPECT_EQ(doc["totals"]["by_type"]["Q8_0"], 1);
}

TEST(GgufInspectCli, JsonAbbreviatesButKeepsFullLengths) {
  const RunResult run = run_gufo("inspect --json " + quoted(data_dir() / "good" / "all_value_types.gguf"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json doc = nlohmann::json::parse(run.out);
  EXPECT_EQ(doc["alignment"], 64);
  for (const auto& entry : doc["metadata"]) {
    if (entry["key"] == "test.u64") {
      EXPECT_EQ(entry["value"].get<uint64_t>(), UINT64_MAX);
    }
    if (entry["key"] == "test.array.nested") {
      EXPECT_EQ(entry["length"], 4);
      EXPECT_EQ(entry["value"][1]["element_type"], "string");
      EXPECT_EQ(entry["value"][1]["value"], nlohmann::json::array({"a", "bc"}));
    }
  }
}

}  // namespace
}  // namespace gufo::gguf
