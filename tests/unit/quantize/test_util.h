// Helpers shared by the quantize tests: a scratch folder per test, running the gufo binary,
// and the relative RMS error of a tensor against reference values.
// Used by tests/unit/quantize/*_test.cpp.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

namespace gufo::quantize::testing {

inline std::filesystem::path scratch_dir(const std::string& suite) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("gufo_" + suite + "_" + std::to_string(::getpid()) + "_" + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

struct RunResult {
  int exit_code = -1;
  std::string stderr_text;
};

// Runs `gufo ARGS`, capturing stderr into `dir`.
inline RunResult run_gufo(const std::string& args, const std::filesystem::path& dir) {
  const std::filesystem::path err = dir / "stderr.txt";
  const std::string command = std::string(GUFO_BINARY) + " " + args + " 2>" + err.string() + " >/dev/null";
  const int status = std::system(command.c_str());
  RunResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err);
  result.stderr_text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return result;
}

inline int line_count(const std::string& text) {
  int lines = 0;
  for (char ch : text) lines += ch == '\n';
  return lines;
}

// sqrt(sum (got - want)^2 / sum want^2).
inline double relative_rms_error(std::span<const float> got, std::span<const float> want) {
  double error = 0;
  double norm = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    error += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  return norm == 0 ? std::sqrt(error) : std::sqrt(error / norm);
}

}  // namespace gufo::quantize::testing
