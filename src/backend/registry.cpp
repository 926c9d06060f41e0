// Backend choice (see registry.h).
#include "backend/registry.h"

#include <charconv>

#include "backend/cpu/cpu_backend.h"
#include "backend/fault_injection.h"
#if defined(GUFO_HAVE_CUDA)
#include "backend/cuda/cuda_backend.h"
#endif

namespace gufo::backend {

Result<DeviceChoice> parse_device(std::string_view text) {
  const Error usage{"--device " + std::string(text) + ": expected cpu, cuda, cuda:N or auto"};
  if (text == "auto") return DeviceChoice{.kind = DeviceChoice::Kind::Auto, .index = 0};
  if (text == "cpu") return DeviceChoice{.kind = DeviceChoice::Kind::Cpu, .index = 0};
  if (text == "cuda") return DeviceChoice{.kind = DeviceChoice::Kind::Cuda, .index = 0};
  if (text.starts_with("cuda:")) {
    const std::string_view digits = text.substr(5);
    int index = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() || index < 0 || index > 1023) {
      return usage;
    }
    return DeviceChoice{.kind = DeviceChoice::Kind::Cuda, .index = index};
  }
  return usage;
}

bool built_with_cuda() {
#if defined(GUFO_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

namespace {

Result<CreatedBackend> create_chosen(const BackendOptions& options) {
  CreatedBackend created;
  const auto make_cpu = [&] { created.backend = std::make_unique<cpu::CpuBackend>(options.threads); };
  switch (options.device.kind) {
    case DeviceChoice::Kind::Cpu:
      make_cpu();
      return created;
    case DeviceChoice::Kind::Cuda: {
#if defined(GUFO_HAVE_CUDA)
      GUFO_ASSIGN_OR_RETURN(created.backend, cuda::create_cuda_backend(options.device.index));
      return created;
#else
      return Error{"--device cuda: this gufo was built without CUDA (build the 'cuda' preset)", ErrorKind::Unsupported};
#endif
    }
    case DeviceChoice::Kind::Auto: {
#if defined(GUFO_HAVE_CUDA)
      auto cuda = cuda::create_cuda_backend(0);
      if (cuda.ok()) {
        created.backend = std::move(*cuda);
        return created;
      }
      created.notice = "using the CPU: " + cuda.error().message;
#endif
      make_cpu();
      return created;
    }
  }
  return Error{"unknown device kind"};
}

}  // namespace

Result<CreatedBackend> create_backend(const BackendOptions& options) {
  GUFO_ASSIGN_OR_RETURN(CreatedBackend created, create_chosen(options));
  created.backend = with_injected_faults(std::move(created.backend), options.faults);
  return created;
}

}  // namespace gufo::backend
