// StopSignals (see stop_signals.h).
#include "cli/stop_signals.h"

#include <signal.h>

#include <cerrno>
#include <ctime>

namespace gufo::cli {

namespace {

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

StopSignals::StopSignals(Handler handler) : handler_(std::move(handler)) {
  const sigset_t set = stop_signal_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  thread_ = std::thread([this] { wait_loop(); });
}

StopSignals::~StopSignals() {
  done_.store(true);
  thread_.join();
}

// sigtimedwait rather than sigwait: the thread looks at done_ ten times a second, so the
// destructor needs no signal of its own to end it.
void StopSignals::wait_loop() {
  const sigset_t set = stop_signal_set();
  int count = 0;
  while (!done_.load()) {
    const timespec tick{.tv_sec = 0, .tv_nsec = 100'000'000};
    const int signal_number = sigtimedwait(&set, nullptr, &tick);
    if (signal_number > 0) handler_(signal_number, ++count);
  }
}

}  // namespace gufo::cli
