// StopSignals: SIGTERM and SIGINT sent to the process reach the handler, on its own thread,
// counted, and do not kill the process.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "cli/stop_signals.h"

namespace gufo::cli {
namespace {

TEST(StopSignals, EachSignalReachesTheHandlerWithItsCount) {
  std::mutex mutex;
  std::condition_variable arrived;
  std::vector<std::pair<int, int>> seen;
  std::thread::id handler_thread;
  {
    const StopSignals signals([&](int signal_number, int count) {
      std::lock_guard lock(mutex);
      seen.emplace_back(signal_number, count);
      handler_thread = std::this_thread::get_id();
      arrived.notify_all();
    });
    for (const int signal_number : {SIGTERM, SIGINT}) {
      // Counted before the signal goes: the handler may run before this thread takes the lock.
      size_t want = 0;
      {
        std::lock_guard lock(mutex);
        want = seen.size() + 1;
      }
      ASSERT_EQ(kill(getpid(), signal_number), 0);
      std::unique_lock lock(mutex);
      ASSERT_TRUE(arrived.wait_for(lock, std::chrono::seconds(10), [&] { return seen.size() == want; }));
    }
  }
  EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{SIGTERM, 1}, {SIGINT, 2}}));
  EXPECT_NE(handler_thread, std::this_thread::get_id());
}

}  // namespace
}  // namespace gufo::cli
