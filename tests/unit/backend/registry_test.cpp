// --device parsing and backend creation (backend/registry.h).
#include <gtest/gtest.h>

#include "backend/registry.h"

namespace gufo::backend {
namespace {

TEST(Registry, ParsesDevices) {
  EXPECT_EQ(parse_device("cpu")->kind, DeviceChoice::Kind::Cpu);
  EXPECT_EQ(parse_device("auto")->kind, DeviceChoice::Kind::Auto);
  EXPECT_EQ(parse_device("cuda")->kind, DeviceChoice::Kind::Cuda);
  auto two = parse_device("cuda:2");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->index, 2);
  for (const char* bad : {"gpu", "cuda:", "cuda:x", "cuda:-1", "cuda:1x", "CPU", ""}) {
    auto parsed = parse_device(bad);
    ASSERT_FALSE(parsed.ok()) << bad;
    EXPECT_NE(parsed.error().message.find("expected cpu, cuda, cuda:N or auto"), std::string::npos);
  }
}

TEST(Registry, CreatesTheCpuBackendAndFallsBackFromAuto) {
  auto cpu = create_backend({.device = {.kind = DeviceChoice::Kind::Cpu, .index = 0}, .threads = 1, .faults = {}});
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->backend->name(), "cpu");
  EXPECT_EQ(cpu->backend->capabilities().backend, "CPU");
  EXPECT_EQ(cpu->backend->capabilities().threads, 1);
  EXPECT_TRUE(cpu->backend->capabilities().batch_invariant);
  EXPECT_FALSE(cpu->backend->capabilities().device_memory);
  EXPECT_EQ(cpu->backend->capabilities().numerics.rfind("CPU ", 0), 0u);  // and the kernel set
  EXPECT_GT(cpu->backend->capabilities().numerics.size(), 4u);
  auto any = create_backend({.device = {.kind = DeviceChoice::Kind::Auto, .index = 0}, .threads = 1, .faults = {}});
  ASSERT_TRUE(any.ok());
  if (any->backend->name() == "cpu" && built_with_cuda()) {
    EXPECT_NE(any->notice.find("using the CPU"), std::string::npos);  // a CUDA build on a machine without a GPU
  }
  auto cuda = create_backend({.device = {.kind = DeviceChoice::Kind::Cuda, .index = 0}, .threads = 1, .faults = {}});
  if (!built_with_cuda()) {
    ASSERT_FALSE(cuda.ok());
    EXPECT_NE(cuda.error().message.find("built without CUDA"), std::string::npos);
    EXPECT_EQ(cuda.error().kind, ErrorKind::Unsupported);
  }
}

}  // namespace
}  // namespace gufo::backend
