// Lines typed by the user for interactive commands. On a terminal: libedit (BSD editline)
// with readline-style editing and history; otherwise (a pipe, a file) plain lines from
// stdin, so the same command is scriptable and testable. A line ending in '\' continues on
// the next one. Ctrl-C while reading ends input like Ctrl-D (see interrupt.h).
#pragma once

#include <optional>
#include <string>

namespace gufo::cli {

class LineReader {
 public:
  LineReader();
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  bool interactive() const { return interactive_; }
  // The next message (continuation lines joined with '\n'), or nullopt at end of input or
  // on Ctrl-C.
  std::optional<std::string> read(const char* prompt);

 private:
  std::optional<std::string> read_line(const char* prompt);
  bool interactive_ = false;
  std::string buffer_;  // bytes read from a pipe past the last line
  bool eof_ = false;
};

}  // namespace gufo::cli
