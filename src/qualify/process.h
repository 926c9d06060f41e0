// Runs one program to completion with a time limit: the qualifier's only way to touch a build
// (each build is a directory of programs; nothing of it is linked into the qualifier).
// Tested by tests/unit/qualify/process_test.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gufo::qualify {

struct ProcessSpec {
  std::vector<std::string> argv;                         // argv[0] is a path (or a name looked up in PATH)
  std::vector<std::pair<std::string, std::string>> env;  // set on top of this process's environment
  std::string working_dir;                               // empty: this process's
  std::string stdout_path;                               // where standard output goes (created or truncated)
  std::string stderr_path;                               // empty: with standard output
  double timeout_s = 600;                                // the process group is killed after this long
};

struct ProcessOutcome {
  int exit_code = -1;      // -1 when killed by a signal
  int signal = 0;          // the signal that ended it, 0 when it exited
  bool timed_out = false;  // killed because it ran past timeout_s
  double seconds = 0;      // wall clock

  bool succeeded() const { return exit_code == 0 && !timed_out; }
  // "exit 3", "killed by signal 11", "timed out after 600 s": for reports and errors.
  std::string describe(double timeout_s) const;
};

// Starts spec.argv[0] in its own process group, with standard input from /dev/null and every
// signal's default disposition, and waits for it; when it ends, whatever else its group still
// runs is killed. An error when it could not be started (a missing program, an unwritable log)
// or when this process was interrupted (then the group is killed first).
Result<ProcessOutcome> run_process(const ProcessSpec& spec);

// From now on SIGINT and SIGTERM interrupt run_process (which kills the program's group, whose
// own process group keeps the terminal's Ctrl-C from reaching it) instead of ending this
// process at once: `gufo qualify` calls it, so that a stopped qualification leaves no servers
// running. Returns whether a signal has come.
void interrupt_on_signals();
bool interrupted();

// The last `max_bytes` of a file (whole lines where possible), for a report's "why".
std::string read_tail(const std::string& path, size_t max_bytes);

// The whole file, or an error naming it.
Result<std::string> read_text(const std::string& path);

}  // namespace gufo::qualify
