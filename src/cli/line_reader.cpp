// LineReader (see line_reader.h).
#include "cli/line_reader.h"

#include <editline/readline.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "cli/interrupt.h"

namespace gufo::cli {

namespace {

// libedit's character source: like fgetc, but a read interrupted by Ctrl-C ends the line
// (EOF) instead of being retried, so readline() returns and the command can act on it.
int interruptible_getc(FILE* stream) {
  unsigned char ch = 0;
  for (;;) {
    const ssize_t n = ::read(fileno(stream), &ch, 1);
    if (n == 1) return ch;
    if (n < 0 && errno == EINTR && !InterruptScope::flag().load()) continue;
    return EOF;
  }
}

}  // namespace

LineReader::LineReader() : interactive_(::isatty(STDIN_FILENO) == 1 && ::isatty(STDOUT_FILENO) == 1) {
  if (interactive_) {
    rl_catch_signals = 0;  // Ctrl-C is ours (interrupt.h), not libedit's
    rl_getc_function = interruptible_getc;
    using_history();
  }
}

LineReader::~LineReader() {
  if (interactive_) clear_history();
}

std::optional<std::string> LineReader::read_line(const char* prompt) {
  if (interactive_) {
    char* line = ::readline(prompt);
    if (line == nullptr || InterruptScope::flag().load()) {
      std::free(line);
      return std::nullopt;
    }
    std::string text(line);
    std::free(line);
    return text;
  }
  for (;;) {
    const size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      std::string text = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      if (!text.empty() && text.back() == '\r') text.pop_back();
      return text;
    }
    if (eof_) {
      if (buffer_.empty()) return std::nullopt;
      std::string text = std::move(buffer_);
      buffer_.clear();
      return text;
    }
    char chunk[4096];
    const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      if (InterruptScope::flag().load()) return std::nullopt;
    } else {
      eof_ = true;
    }
  }
}

std::optional<std::string> LineReader::read(const char* prompt) {
  std::optional<std::string> line = read_line(prompt);
  if (!line) return std::nullopt;
  std::string message = std::move(*line);
  while (!message.empty() && message.back() == '\\') {
    message.back() = '\n';
    std::optional<std::string> more = read_line(interactive_ ? "... " : "");
    if (!more) break;
    message += *more;
  }
  if (interactive_ && !message.empty()) add_history(message.c_str());
  return message;
}

}  // namespace gufo::cli
