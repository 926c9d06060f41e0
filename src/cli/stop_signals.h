// SIGTERM and SIGINT for `gufo serve`: blocked in every thread and taken, synchronously, by
// one thread of their own, which calls a handler with the signal and how many have come so
// far. The handler runs on an ordinary thread (not in a signal handler), so it may lock,
// print and notify; the server uses the count to tell "drain" (first) from "hurry" (second).
// Construct it before starting any other thread: threads inherit the blocked mask.
// Tested by tests/unit/cli/stop_signals_test.cpp and tests/functional/lifecycle.test.mjs.
#pragma once

#include <atomic>
#include <functional>
#include <thread>

namespace gufo::cli {

class StopSignals {
 public:
  using Handler = std::function<void(int signal_number, int count)>;

  explicit StopSignals(Handler handler);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  void wait_loop();

  Handler handler_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace gufo::cli
