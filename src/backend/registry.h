// Backend choice in one place: `--device cpu|cuda|cuda:N|auto` becomes a Backend here and
// nowhere else, so no command or engine code names a concrete backend. auto is CUDA when
// this build has it and a GPU is present, else the CPU (and the notice says why).
// Tested by tests/unit/backend/registry_test.cpp.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "backend/backend.h"
#include "core/faults.h"
#include "core/result.h"

namespace gufo::backend {

struct DeviceChoice {
  enum class Kind { Auto, Cpu, Cuda };
  Kind kind = Kind::Auto;
  int index = 0;  // cuda:N
};

// "cpu", "cuda", "cuda:N", "auto"; an error names the flag and the accepted forms.
Result<DeviceChoice> parse_device(std::string_view text);

struct BackendOptions {
  DeviceChoice device;
  int threads = 0;  // CPU threads (0: all); also the host threads a device backend may use
  Faults faults;    // GUFO_FAULTS' forward faults wrap the backend (fault_injection.h)
};

struct CreatedBackend {
  std::unique_ptr<Backend> backend;
  std::string notice;  // e.g. why auto fell back to the CPU; empty when nothing to say
};

Result<CreatedBackend> create_backend(const BackendOptions& options);

// Whether this binary was built with the CUDA backend.
bool built_with_cuda();

}  // namespace gufo::backend
