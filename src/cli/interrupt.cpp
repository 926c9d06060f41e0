// InterruptScope (see interrupt.h).
#include "cli/interrupt.h"

#include <csignal>

namespace gufo::cli {

namespace {

std::atomic<bool> g_interrupted{false};  // NOTE(signals): see interrupt.h
struct sigaction g_previous {};

extern "C" void on_sigint(int) { g_interrupted.store(true, std::memory_order_relaxed); }

}  // namespace

static_assert(std::atomic<bool>::is_always_lock_free, "the SIGINT flag must be safe in a signal handler");

std::atomic<bool>& InterruptScope::flag() { return g_interrupted; }

InterruptScope::InterruptScope() {
  g_interrupted = false;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: reads return EINTR
  sigaction(SIGINT, &action, &g_previous);
}

InterruptScope::~InterruptScope() { sigaction(SIGINT, &g_previous, nullptr); }

}  // namespace gufo::cli
