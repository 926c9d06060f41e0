// GUFO_FAULTS (core/faults.h): what it accepts, one line for what it does not, and the backend
// that fails on purpose (backend/fault_injection.h).
#include <gtest/gtest.h>

#include "backend/fault_injection.h"
#include "core/faults.h"

namespace gufo {
namespace {

std::string message(std::string_view spec) {
  auto faults = parse_faults(spec);
  EXPECT_FALSE(faults.ok()) << spec;
  return faults.ok() ? std::string("(accepted)") : faults.error().message;
}

TEST(Faults, EmptyInjectsNothing) {
  auto faults = parse_faults("");
  ASSERT_TRUE(faults.ok());
  EXPECT_EQ(faults->request_delay.count(), 0);
  EXPECT_FALSE(faults->any_forward_fault());
  EXPECT_EQ(faults->describe(), "");
}

TEST(Faults, ReadsEveryFault) {
  auto faults = parse_faults("request_delay_ms=20,forward_oom_at=3,device_lost_at=7");
  ASSERT_TRUE(faults.ok()) << faults.error().message;
  EXPECT_EQ(faults->request_delay.count(), 20);
  EXPECT_EQ(faults->forward_oom_at, 3);
  EXPECT_EQ(faults->device_lost_at, 7);
  EXPECT_TRUE(faults->any_forward_fault());
  EXPECT_EQ(faults->describe(),
            "every request waits 20 ms first; forward call 3 fails as out of memory; the device is lost at forward "
            "call 7");
}

TEST(Faults, BadSpecificationsNameTheirPart) {
  EXPECT_EQ(message("slow=1"),
            "GUFO_FAULTS: unknown fault 'slow' (known: request_delay_ms, forward_oom_at, device_lost_at)");
  EXPECT_EQ(message("request_delay_ms=-1"), "GUFO_FAULTS: request_delay_ms: '-1' is not milliseconds from 0 to 60000");
  EXPECT_EQ(message("request_delay_ms=20ms"),
            "GUFO_FAULTS: request_delay_ms: '20ms' is not milliseconds from 0 to 60000");
  EXPECT_EQ(message("request_delay_ms"), "GUFO_FAULTS: request_delay_ms: '' is not milliseconds from 0 to 60000");
  EXPECT_EQ(message("request_delay_ms=1,"), "GUFO_FAULTS: an empty item (NAME=VALUE, separated by single commas)");
  EXPECT_EQ(message("request_delay_ms=1,,request_delay_ms=2"),
            "GUFO_FAULTS: an empty item (NAME=VALUE, separated by single commas)");
  EXPECT_EQ(message("request_delay_ms=1,request_delay_ms=2"), "GUFO_FAULTS: request_delay_ms given twice");
  EXPECT_EQ(message("request_delay_ms=70000"),
            "GUFO_FAULTS: request_delay_ms: '70000' is not milliseconds from 0 to 60000");
  EXPECT_EQ(message("forward_oom_at=0"),
            "GUFO_FAULTS: forward_oom_at: '0' is not a forward call from 1 to 1099511627776");
  EXPECT_EQ(message("device_lost_at=x"),
            "GUFO_FAULTS: device_lost_at: 'x' is not a forward call from 1 to 1099511627776");
  EXPECT_EQ(message("device_lost_at=1,device_lost_at=2"), "GUFO_FAULTS: device_lost_at given twice");
}

// Counts the forward calls that reach it; everything else is never called here.
class CountingBackend final : public backend::Backend {
 public:
  explicit CountingBackend(int* calls) : calls_(calls) {}
  std::string_view name() const override { return "counting"; }
  backend::Capabilities capabilities() const override { return {}; }
  backend::MemoryInfo memory() const override { return {}; }
  bool supports(const model::Node&) const override { return true; }
  Status prepare_weights(const model::Graph&) override { return {}; }
  Result<std::unique_ptr<backend::KvCache>> create_kv_cache(const backend::KvCacheSpec&) override {
    return Error{"not here"};
  }
  Status forward(const model::Graph&, const backend::Batch&, backend::KvCache&, const backend::ForwardOutputs&,
                 const backend::NodeTap*) override {
    ++*calls_;
    return {};
  }

 private:
  int* calls_;
};

class NoCache final : public backend::KvCache {
 public:
  const backend::KvCacheSpec& spec() const override { return spec_; }
  void truncate(int32_t, int32_t) override {}
  Status set_blocks(int32_t, std::span<const int32_t>, int32_t) override { return {}; }
  Status read_positions(int32_t, int32_t, const LayerSink&) override { return {}; }
  Status write_positions(int32_t, int32_t, const LayerSource&) override { return {}; }

 private:
  backend::KvCacheSpec spec_;
};

// The kinds of the first n forward calls through `faults` ("ok", "oom", "lost", "other").
std::vector<std::string> outcomes(const Faults& faults, int n, int* reached) {
  auto backend = backend::with_injected_faults(std::make_unique<CountingBackend>(reached), faults);
  model::Graph graph;
  backend::Batch batch;
  NoCache cache;
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    const Status s = backend->forward(graph, batch, cache, {}, nullptr);
    out.emplace_back(s.ok()                                     ? "ok"
                     : s.error().kind == ErrorKind::OutOfMemory ? "oom"
                     : s.error().kind == ErrorKind::DeviceLost  ? "lost"
                                                                : "other");
  }
  return out;
}

TEST(FaultInjection, OneForwardFailsAsOutOfMemoryAndTheRestRun) {
  int reached = 0;
  EXPECT_EQ(outcomes(Faults{.forward_oom_at = 2}, 4, &reached), (std::vector<std::string>{"ok", "oom", "ok", "ok"}));
  EXPECT_EQ(reached, 3);
}

TEST(FaultInjection, ALostDeviceStaysLost) {
  int reached = 0;
  EXPECT_EQ(outcomes(Faults{.forward_oom_at = 1, .device_lost_at = 3}, 5, &reached),
            (std::vector<std::string>{"oom", "ok", "lost", "lost", "lost"}));
  EXPECT_EQ(reached, 1);
}

TEST(FaultInjection, NoForwardFaultLeavesTheBackendUnwrapped) {
  int reached = 0;
  auto inner = std::make_unique<CountingBackend>(&reached);
  backend::Backend* raw = inner.get();
  EXPECT_EQ(
      backend::with_injected_faults(std::move(inner), Faults{.request_delay = std::chrono::milliseconds(5)}).get(),
      raw);
}

}  // namespace
}  // namespace gufo
