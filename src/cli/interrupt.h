// SIGINT for interactive commands (`gufo chat`): Ctrl-C sets a flag instead of killing the
// process; the command decides what it means (stop the current answer, or leave at the
// prompt). The flag is process-wide by nature (a signal handler can only reach a global),
// so it lives here, at the CLI edge, and nowhere else.
#pragma once

#include <atomic>

namespace gufo::cli {

// Installs the handler (without SA_RESTART, so a blocking read returns EINTR) for the
// lifetime of the object and restores the previous one after.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  // Set by Ctrl-C; cleared by the command when it has acted on it.
  static std::atomic<bool>& flag();
};

}  // namespace gufo::cli
