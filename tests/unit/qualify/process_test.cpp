// run_process (src/qualify/process.h): exit codes, output, environment, the time limit.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "qualify/process.h"

namespace gufo::qualify {
namespace {

namespace fs = std::filesystem;

class QualifyProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("qualify_process_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  ProcessSpec shell(const std::string& script, double timeout_s = 30) {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.stdout_path = (dir_ / "out").string();
    spec.stderr_path = (dir_ / "err").string();
    spec.timeout_s = timeout_s;
    return spec;
  }
  fs::path dir_;
};

TEST_F(QualifyProcess, ReportsTheExitCodeAndKeepsBothStreams) {
  auto run = run_process(shell("echo out; echo err >&2; exit 3"));
  ASSERT_TRUE(run.ok()) << run.error().message;
  EXPECT_EQ(run->exit_code, 3);
  EXPECT_FALSE(run->succeeded());
  EXPECT_EQ(run->describe(30), "exit 3");
  EXPECT_EQ(*read_text((dir_ / "out").string()), "out\n");
  EXPECT_EQ(*read_text((dir_ / "err").string()), "err\n");
}

TEST_F(QualifyProcess, PassesTheExtraEnvironment) {
  ProcessSpec spec = shell("printf %s \"$QUALIFY_TEST_VALUE\"");
  spec.env = {{"QUALIFY_TEST_VALUE", "a b"}};
  auto run = run_process(spec);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->succeeded());
  EXPECT_EQ(*read_text((dir_ / "out").string()), "a b");
}

TEST_F(QualifyProcess, KillsAProcessGroupPastItsTimeLimit) {
  // The shell's child (sleep) is in the same group and goes too: the call returns in time.
  auto run = run_process(shell("sleep 30 & wait", 0.3));
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(run->timed_out);
  EXPECT_LT(run->seconds, 10);
  EXPECT_EQ(run->describe(0.3), "timed out after 0.3 s");
}

// Whether a process is gone (or a zombie, which runs nothing), waiting up to a second.
bool gone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, name, state;
    if (!(stat >> pid_field >> name >> state) || state == "Z") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(QualifyProcess, WhatAProgramLeftRunningGoesWithIt) {
  // A server started in the background and not stopped: killed with its group, after a
  // normal exit and after a timeout alike.
  for (const double timeout_s : {30.0, 0.3}) {
    const std::string wait = timeout_s < 1 ? "wait" : "true";
    auto run = run_process(shell("sleep 30 & echo $! > " + (dir_ / "pid").string() + "; " + wait, timeout_s));
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->timed_out, timeout_s < 1);
    const pid_t pid = std::stoi(*read_text((dir_ / "pid").string()));
    EXPECT_TRUE(gone(pid)) << "sleep " << pid << " still runs (timeout " << timeout_s << " s)";
  }
}

TEST_F(QualifyProcess, AMissingProgramIsAnError) {
  ProcessSpec spec = shell("");
  spec.argv = {(dir_ / "no-such-program").string()};
  auto run = run_process(spec);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.error().message.find("cannot start"), std::string::npos) << run.error().message;
}

TEST_F(QualifyProcess, ReadTailKeepsWholeLines) {
  auto run = run_process(shell("printf 'first line\\nsecond line\\nthird\\n'"));
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(read_tail((dir_ / "out").string(), 10), "third\n");
  EXPECT_FALSE(read_text((dir_ / "missing").string()).ok());
}

}  // namespace
}  // namespace gufo::qualify
