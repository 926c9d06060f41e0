// GUFO_FAULTS (server/faults.h): what it accepts, and one line for what it does not.
#include <gtest/gtest.h>

#include "server/faults.h"

namespace gufo::server {
namespace {

TEST(ServerFaults, EmptyInjectsNothing) {
  auto faults = parse_faults("");
  ASSERT_TRUE(faults.ok());
  EXPECT_EQ(faults->request_delay.count(), 0);
}

TEST(ServerFaults, ReadsARequestDelay) {
  auto faults = parse_faults("request_delay_ms=20");
  ASSERT_TRUE(faults.ok()) << faults.error().message;
  EXPECT_EQ(faults->request_delay.count(), 20);
}

TEST(ServerFaults, BadSpecificationsNameTheirPart) {
  const auto message = [](std::string_view spec) {
    auto faults = parse_faults(spec);
    EXPECT_FALSE(faults.ok()) << spec;
    return faults.ok() ? std::string("(accepted)") : faults.error().message;
  };
  EXPECT_EQ(message("slow=1"), "GUFO_FAULTS: unknown fault 'slow' (known: request_delay_ms)");
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
}

}  // namespace
}  // namespace gufo::server
