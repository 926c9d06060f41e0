// `gufo qualify` against deliberately broken candidates: each must be caught by the stage
// meant to catch it, and a harmless difference must not be. The candidates are wrappers
// around the real gufo (a shell script as bin/gufo) that change what a broken toolchain
// would change: the logits (numerics), the speed (performance), a server's latency or its
// answers (serving), an oracle suite that checks nothing (operators). Bad input (the same
// build twice, two revisions, a missing gufo, an --out that holds other files) gets one clear
// line and exit 1.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "qualify/process.h"

namespace gufo::qualify {
namespace {

namespace fs = std::filesystem;

struct QualifyRun {
  int exit_code = -1;
  std::string err;
  nlohmann::json report;  // null when no report.json was written
};

class QualifyMutants : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qualify_mutants_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // DIR/NAME/bin/gufo: runs the real gufo after `body`, which may rewrite "$@"; tests/ links
  // the real build's tests.
  fs::path wrapper_build(const std::string& name, const std::string& body = "") {
    const fs::path build = dir_ / name;
    fs::create_directories(build / "bin");
    const fs::path gufo = build / "bin" / "gufo";
    std::ofstream(gufo) << "#!/bin/sh\nreal='" << GUFO_TEST_BINARY << "'\n" << body << "\nexec \"$real\" \"$@\"\n";
    ::chmod(gufo.c_str(), 0755);
    fs::create_directory_symlink(fs::path(GUFO_TEST_BUILD_DIR) / "tests", build / "tests");
    return build;
  }

  QualifyRun qualify(const fs::path& baseline, const fs::path& candidate, const std::vector<std::string>& extra,
                     bool quick = true) {
    ProcessSpec spec;
    spec.argv = {GUFO_TEST_BINARY,   "qualify",  "--baseline",         baseline.string(), "--candidate",
                 candidate.string(), "--source", GUFO_TEST_SOURCE_DIR, "--out",           (dir_ / "out").string()};
    if (quick) spec.argv.push_back("--quick");
    for (const std::string& e : extra) spec.argv.push_back(e);
    spec.stdout_path = (dir_ / "qualify.out").string();
    spec.stderr_path = (dir_ / "qualify.err").string();
    spec.timeout_s = 500;  // under ctest's 600 s a test
    QualifyRun result;
    auto run = run_process(spec);
    if (!run.ok()) return result;
    result.exit_code = run->exit_code;
    auto err = read_text(spec.stderr_path);
    result.err = err.ok() ? *err : "";
    auto text = read_text((dir_ / "out" / "report.json").string());
    if (text.ok()) result.report = nlohmann::json::parse(*text, nullptr, false);
    return result;
  }

  static const nlohmann::json& stage(const QualifyRun& run, int number) {
    return run.report["stages"][static_cast<size_t>(number - 1)];
  }

  fs::path dir_;
};

// Mutants caught by what they do in a measured time (speed, latency, the soak's work in its
// minutes): ctest runs these alone (tests/unit/qualify/CMakeLists.txt), since a neighbouring
// test on a 2-core machine moves a request's latency by more than the 20 ms they look for.
class QualifyTimedMutants : public QualifyMutants {};

// Swaps the shipped q8_0 model for its q4_k_m sibling: the logits move as a miscompiled
// kernel's would, within q4_k_m's own limits but far outside q8_0's. And, caught by another
// check of the same stage (one run for both, to spare CI a minute), its speculative decoding
// penalises other tokens than plain decoding (a repeat penalty with --spec ngram).
constexpr const char* kOtherLogits = R"(spec=
for a do shift
  case "$a" in *gufo-tiny-q8_0.gguf) a="${a%gufo-tiny-q8_0.gguf}gufo-tiny-q4_k_m.gguf" ;; ngram) spec=1 ;; esac
  set -- "$@" "$a"
done
if [ -n "$spec" ]; then set -- "$@" --repeat-penalty 1.3; fi)";

// The scalar CPU kernels on one thread where the baseline has its SIMD kernels on two: a
// build several times slower (robust to a busy machine), with the same answers.
constexpr const char* kSlower = R"(export GUFO_CPU_KERNELS=scalar
prev=
for a do shift
  if [ "$prev" = "-t" ]; then a=1; fi
  prev=$a
  set -- "$@" "$a"
done)";

TEST_F(QualifyMutants, NumericsCatchesACandidateWhoseLogitsMoved) {
  const QualifyRun run =
      qualify(wrapper_build("baseline"), wrapper_build("candidate", kOtherLogits), {"--stages", "2"});
  EXPECT_EQ(run.exit_code, 1);
  ASSERT_TRUE(run.report.is_object()) << run.err;
  EXPECT_EQ(run.report["verdict"], "fail");
  const nlohmann::json& numerics = stage(run, 2);
  EXPECT_EQ(numerics["verdict"], "fail");
  EXPECT_FALSE(numerics["data"]["logits_identical"].get<bool>());
  // `gufo quality` judges the file it reads by that file's own limits, and q4_k_m's are wide:
  // the mutant stays within them, also against the baseline's logits. What catches it is the
  // comparison with the baseline build: four times the baseline's KL.
  std::map<std::string, std::string> verdicts;
  std::map<std::string, std::string> details;
  for (const nlohmann::json& check : numerics["checks"]) {
    verdicts[check["name"]] = check["verdict"];
    details[check["name"]] = check["detail"];
  }
  EXPECT_EQ(verdicts["gufo-tiny-q8_0: baseline within limits, prefill validated"], "pass");
  EXPECT_EQ(verdicts["gufo-tiny-q8_0: candidate within limits, prefill validated"], "pass");
  EXPECT_EQ(verdicts["gufo-tiny-q8_0: candidate no worse than baseline"], "fail");
  EXPECT_EQ(verdicts["gufo-tiny-q4_k_m: candidate no worse than baseline"], "pass");
  const std::string speculative = "speculative decoding: the same text with and without drafts, drafts kept";
  EXPECT_EQ(verdicts[speculative], "fail");
  EXPECT_NE(details[speculative].find("differs"), std::string::npos) << details[speculative];
}

TEST_F(QualifyMutants, NumericsPassesACandidateWithOtherCpuKernels) {
  // The scalar kernels instead of the SIMD ones: sums in another order at most, well inside
  // every limit. A qualifier that failed this would cry wolf on every toolchain.
  const QualifyRun run = qualify(wrapper_build("baseline"),
                                 wrapper_build("candidate", "export GUFO_CPU_KERNELS=scalar"), {"--stages", "2"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  EXPECT_EQ(stage(run, 2)["verdict"], "pass") << stage(run, 2)["reason"];
  bool speculative_checked = false;
  for (const nlohmann::json& check : stage(run, 2)["checks"]) {
    if (check["name"] == "speculative decoding: the same text with and without drafts, drafts kept") {
      EXPECT_EQ(check["verdict"], "pass") << check["detail"];
      speculative_checked = true;
    }
  }
  EXPECT_TRUE(speculative_checked);
  EXPECT_EQ(run.report["verdict"], "fail");  // --stages never passes the whole qualification
  EXPECT_EQ(stage(run, 1)["verdict"], "skip");
  EXPECT_EQ(stage(run, 1)["reason"], "not selected (--stages)");
}

TEST_F(QualifyTimedMutants, PerformanceCatchesASlowerCandidate) {
  const QualifyRun run = qualify(wrapper_build("baseline"), wrapper_build("candidate", kSlower),
                                 {"--stages", "5", "-t", "2", "--perf-tolerance", "0.1"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const nlohmann::json& performance = stage(run, 5);
  EXPECT_EQ(performance["verdict"], "fail");
  EXPECT_NE(performance["reason"].get<std::string>().find("pp512 @ d0"), std::string::npos) << performance["reason"];
  EXPECT_NE(performance["reason"].get<std::string>().find("slower by"), std::string::npos) << performance["reason"];
  EXPECT_LT(performance["data"]["tests"]["pp512 @ d0"]["relative_high"].get<double>(), -0.1);
}

TEST_F(QualifyTimedMutants, ServingCatchesACandidateServerThatIsTwentyMillisecondsSlower) {
  // GUFO_FAULTS (core/faults.h) puts a 20 ms sleep into every request of the candidate's
  // server; the answers stay the same.
  const QualifyRun run =
      qualify(wrapper_build("baseline"), wrapper_build("candidate", "export GUFO_FAULTS=request_delay_ms=20"),
              {"--stages", "2,3", "--functional-profiles", "errors"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const nlohmann::json& serving = stage(run, 3);
  EXPECT_EQ(serving["verdict"], "fail");
  const nlohmann::json& checks = serving["checks"];
  ASSERT_GE(checks.size(), 3u);
  EXPECT_EQ(checks[0]["verdict"], "pass") << checks[0]["detail"];         // each build stable
  EXPECT_EQ(checks[1]["verdict"], "pass") << checks[1]["detail"];         // the same answers
  EXPECT_EQ(checks[2]["name"], "per-request latency within 5% or 3 ms");  // the defaults
  EXPECT_EQ(checks[2]["verdict"], "fail") << checks[2]["detail"];
  // And it failed for the fault: most requests are some 20 ms slower, paired round by round.
  int slower = 0;
  for (const auto& [name, request] : serving["data"]["requests"].items()) {
    slower += request["latency"]["paired_ms"].get<double>() > 10 ? 1 : 0;
  }
  EXPECT_GE(slower, 5) << serving["data"]["requests"].dump();
}

TEST_F(QualifyMutants, ServingCatchesACandidateWhoseAnswersChanged) {
  // A server that no longer splits the model's <think> block from its answer, with the same
  // logits: the numerics stage finds them bit-identical, so every answer must match.
  const QualifyRun run = qualify(
      wrapper_build("baseline"),
      wrapper_build("candidate", "if [ \"$1\" = serve ]; then shift; set -- serve --reasoning-format none \"$@\"; fi"),
      {"--stages", "2,3", "--functional-profiles", "errors"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  EXPECT_EQ(stage(run, 2)["verdict"], "pass");
  EXPECT_TRUE(stage(run, 2)["data"]["logits_identical"].get<bool>());
  const nlohmann::json& serving = stage(run, 3);
  EXPECT_EQ(serving["verdict"], "fail");
  ASSERT_GE(serving["checks"].size(), 2u);
  EXPECT_EQ(serving["checks"][1]["name"], "the same answers on both builds");
  EXPECT_EQ(serving["checks"][1]["verdict"], "fail") << serving["checks"][1]["detail"];
  EXPECT_NE(serving["checks"][1]["detail"].get<std::string>().find("chat_greedy"), std::string::npos);
}

TEST_F(QualifyMutants, OperatorsFailsAnOracleSuiteThatRanNoCase) {
  // A suite whose every case skipped (a GPU that was not found) checked nothing.
  const fs::path candidate = dir_ / "candidate";
  fs::create_directories(candidate / "bin");
  fs::create_directories(candidate / "tests" / "unit" / "backend");
  fs::create_directories(candidate / "tests" / "unit" / "quant");
  fs::create_symlink(GUFO_TEST_BINARY, candidate / "bin" / "gufo");
  fs::create_symlink(fs::path(GUFO_TEST_BUILD_DIR) / "tests/unit/quant/quant_test",
                     candidate / "tests/unit/quant/quant_test");
  const fs::path suite = candidate / "tests/unit/backend/cpu_ops_test";
  std::ofstream(suite) << "#!/bin/sh\nout=${1#--gtest_output=json:}\n"
                       << R"(echo '{"tests": 2, "failures": 0, "testsuites": [{"testsuite": )"
                       << R"([{"name": "A", "result": "SKIPPED"}, {"name": "B", "result": "SKIPPED"}]}]}' > "$out")"
                       << "\n";
  ::chmod(suite.c_str(), 0755);
  const QualifyRun run = qualify(wrapper_build("baseline"), candidate, {"--stages", "1,2"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const nlohmann::json& operators = stage(run, 1);
  EXPECT_EQ(operators["verdict"], "fail");
  EXPECT_NE(operators["reason"].get<std::string>().find("no case ran"), std::string::npos) << operators["reason"];
  // The failed stage gates the next one, which says why it did not run.
  EXPECT_EQ(stage(run, 2)["verdict"], "skip");
  EXPECT_EQ(stage(run, 2)["reason"], "did not run: stage 1 (operators) failed");
}

TEST_F(QualifyMutants, AMissingOracleSuiteFailsWithItsName) {
  const fs::path candidate = dir_ / "candidate";
  fs::create_directories(candidate / "bin");
  fs::create_symlink(GUFO_TEST_BINARY, candidate / "bin" / "gufo");
  const QualifyRun run = qualify(wrapper_build("baseline"), candidate, {"--stages", "1"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  EXPECT_EQ(stage(run, 1)["verdict"], "fail");
  EXPECT_NE(stage(run, 1)["reason"].get<std::string>().find("no tests/unit/backend/cpu_ops_test"), std::string::npos);
}

TEST_F(QualifyMutants, DistributionNamesWhatACandidateBuildLacks) {
  // A directory with a gufo but no CMake install rules or package configuration: stage 6 says
  // which; README's qualified-toolchain line is the source tree's, checked against its newest
  // recorded report (qualification/), whatever the builds.
  const QualifyRun run = qualify(wrapper_build("baseline"), wrapper_build("candidate"), {"--stages", "6"});
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const nlohmann::json& distribution = stage(run, 6);
  EXPECT_EQ(distribution["verdict"], "fail");
  ASSERT_EQ(distribution["checks"].size(), 3u);
  EXPECT_EQ(distribution["checks"][0]["name"], "cmake --install");
  EXPECT_EQ(distribution["checks"][0]["verdict"], "fail");
  EXPECT_EQ(distribution["checks"][1]["verdict"], "fail");
  EXPECT_NE(distribution["checks"][1]["detail"].get<std::string>().find("no CPackConfig.cmake"), std::string::npos);
  EXPECT_EQ(distribution["checks"][2]["name"], "README's qualified-toolchain line");
  EXPECT_EQ(distribution["checks"][2]["verdict"], "pass") << distribution["checks"][2]["detail"];
}

// The check of stage 4 named `name`.
const nlohmann::json& check_named(const nlohmann::json& stage, const std::string& name) {
  for (const nlohmann::json& c : stage["checks"]) {
    if (c["name"].get<std::string>().rfind(name, 0) == 0) return c;
  }
  static const nlohmann::json none;
  return none;
}

TEST_F(QualifyMutants, PressureCatchesACandidateThatCrashesWhenMemoryRunsOut) {
  // Under an address-space limit this candidate's `gufo run` dies by a signal, where gufo says
  // in one line that memory ran out.
  const QualifyRun run = qualify(wrapper_build("baseline"),
                                 wrapper_build("candidate",
                                               "if [ \"$1\" = run ] && [ \"$(ulimit -v)\" != unlimited ]; then "
                                               "kill -SEGV $$; fi"),
                                 {"--stages", "4", "--soak-minutes", "0.2"}, /*quick=*/false);
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const nlohmann::json& pressure = stage(run, 4);
  EXPECT_EQ(pressure["verdict"], "fail");
  const nlohmann::json& limit = check_named(pressure, "a model past the memory");
  EXPECT_EQ(limit["verdict"], "fail");
  EXPECT_NE(limit["detail"].get<std::string>().find("signal 11"), std::string::npos) << limit["detail"];
  EXPECT_EQ(check_named(pressure, "KV pool past its limit")["verdict"], "pass");
}

TEST_F(QualifyTimedMutants, SoakCatchesACandidateThatStopsAnsweringMidway) {
  // This candidate's server loses its device after 40 forward calls (a few conversation turns)
  // when it runs the soak (soak.mjs serves with --ctx 1024): the functional profile and the
  // memory limits pass, the soak's conversations fail. (At 400 calls a loaded CI machine once
  // finished the soak's 15 s before the loss.)
  const QualifyRun run = qualify(
      wrapper_build("baseline"),
      wrapper_build("candidate", "case \" $* \" in *\" --ctx 1024 \"*) export GUFO_FAULTS=device_lost_at=40 ;; esac"),
      {"--stages", "4", "--soak-minutes", "0.25"}, /*quick=*/false);
  ASSERT_TRUE(run.report.is_object()) << run.err;
  const nlohmann::json& pressure = stage(run, 4);
  EXPECT_EQ(pressure["verdict"], "fail");
  const nlohmann::json& answered = check_named(pressure, "soak: every request answered");
  EXPECT_EQ(answered["verdict"], "fail") << answered;
  EXPECT_NE(answered["detail"].get<std::string>().find("device"), std::string::npos) << answered["detail"];
  EXPECT_EQ(check_named(pressure, "KV pool past its limit")["verdict"], "pass");
  EXPECT_EQ(check_named(pressure, "a model past the memory")["verdict"], "pass");
}

TEST_F(QualifyMutants, ASoakLengthWithTheQuickProfileIsRefused) {
  const QualifyRun run = qualify(wrapper_build("baseline"), wrapper_build("candidate"), {"--soak-minutes", "1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "gufo: error: --soak-minutes: the quick profile has no soak (stage 4)\n");
  EXPECT_TRUE(run.report.is_null());
}

TEST_F(QualifyMutants, TwoRevisionsAreRefused) {
  const std::string other_revision =
      "if [ \"$1\" = diagnose ]; then \"$real\" \"$@\" | sed 's/\"git_revision\": \"/\"git_revision\": \"0ther/'; "
      "exit; fi";
  const QualifyRun run = qualify(wrapper_build("baseline"), wrapper_build("candidate", other_revision), {});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("qualify compares two builds of one revision"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("0ther"), std::string::npos) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_TRUE(run.report.is_null());
}

TEST_F(QualifyMutants, TheSameBuildTwiceAndAMissingGufoAreRefused) {
  const fs::path baseline = wrapper_build("baseline");
  QualifyRun run = qualify(baseline, baseline, {});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("the same directory"), std::string::npos) << run.err;
  fs::create_directories(dir_ / "empty");
  run = qualify(baseline, dir_ / "empty", {});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("candidate " + (dir_ / "empty").string() + ": no bin/gufo"), std::string::npos) << run.err;
}

TEST_F(QualifyMutants, AnOutDirectoryWithOtherFilesIsLeftAlone) {
  fs::create_directories(dir_ / "out");
  std::ofstream(dir_ / "out" / "notes.txt") << "mine";
  const QualifyRun run = qualify(wrapper_build("baseline"), wrapper_build("candidate"), {"--stages", "2"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("not empty and not an earlier qualification's directory"), std::string::npos) << run.err;
  EXPECT_EQ(*read_text((dir_ / "out" / "notes.txt").string()), "mine");
  EXPECT_FALSE(fs::exists(dir_ / "out" / "logs"));
}

}  // namespace
}  // namespace gufo::qualify
