// Helpers shared by the diagnose tests: run a command and capture what it printed.
// Part of tests/unit/diagnose (ctest --preset unit -R diagnose).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace gufo::diagnose::test_util {

struct CommandOutput {
  int exit_code = -1;
  std::string out;  // stdout only
};

// Runs `command` through the shell and returns its exit code and stdout.
inline CommandOutput run_command(const std::string& command) {
  CommandOutput result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t got = 0;
  while ((got = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.out.append(buffer, got);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

inline std::string first_line(const std::string& text) {
  const size_t eol = text.find('\n');
  return eol == std::string::npos ? text : text.substr(0, eol);
}

}  // namespace gufo::diagnose::test_util
