// Machine fingerprint: the input list and the hash documented in fingerprint.h.
// Tested by tests/unit/diagnose.
#include "diagnose/fingerprint.h"

#include <cstdio>

namespace gufo::diagnose {
namespace {

std::string or_none(std::string_view value) { return value.empty() ? std::string("none") : std::string(value); }

std::string join(const std::vector<std::string>& items, std::string_view separator) {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

uint64_t hash_netstring(std::string_view text, uint64_t state) {
  state = fnv1a_64(std::to_string(text.size()), state);
  state = fnv1a_64(":", state);
  state = fnv1a_64(text, state);
  return fnv1a_64(",", state);
}

}  // namespace

std::vector<FingerprintInput> fingerprint_inputs(const BuildInfo& build, const SystemInfo& system) {
  // NOTE(fingerprint): 1 GiB; memory is rounded to it, to the nearest.
  constexpr uint64_t gib = uint64_t{1} << 30;
  constexpr uint64_t mib = uint64_t{1} << 20;
  std::vector<FingerprintInput> inputs;
  auto add = [&inputs](std::string name, std::string value) { inputs.push_back({std::move(name), std::move(value)}); };

  add("fingerprint.scheme", "gufo-fingerprint-v1");
  add("cpu.model", system.cpu.model);
  add("cpu.logical_cores", std::to_string(system.cpu.online_cores));
  add("cpu.simd", system.cpu.simd.empty() ? "none" : join(system.cpu.simd, ","));
  add("memory.total_gib", std::to_string((system.memory.total_bytes + gib / 2) / gib));

  const GpuInfo& gpu = system.gpu;
  add("gpu.count", std::to_string(gpu.devices.size()));
  for (const cuda::DeviceInfo& device : gpu.devices) {
    const std::string prefix = "gpu." + std::to_string(device.index) + ".";
    add(prefix + "name", device.name);
    add(prefix + "compute_capability", std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor));
    add(prefix + "memory_mib", std::to_string(device.total_memory_bytes / mib));
    add(prefix + "uuid", device.uuid);
  }
  add("gpu.driver_version", or_none(cuda::format_cuda_version(gpu.versions.driver)));
  add("gpu.kernel_driver_version", or_none(gpu.kernel_driver_version));
  add("gpu.cublas_runtime_version", or_none(cuda::format_blas_version(static_cast<uint64_t>(gpu.versions.cublas))));

  add("build.cxx_compiler_id", std::string(build.cxx_compiler_id));
  add("build.cxx_compiler_version", std::string(build.cxx_compiler_version));
  add("build.cxx_compiler_banner", std::string(build.cxx_compiler_banner));
  add("build.stdlib", std::string(build.stdlib_name) + " " + std::string(build.stdlib_version));
  add("build.cuda_toolkit_version", or_none(build.cuda_toolkit_version));
  add("build.cublas_header_version", or_none(build.cublas_header_version));
  add("build.cuda_architectures", or_none(build.cuda_architectures));
  add("build.type", std::string(build.build_type));
  return inputs;
}

std::string fingerprint_hash(const std::vector<FingerprintInput>& inputs) {
  uint64_t state = kFnv1a64Offset;
  for (const FingerprintInput& input : inputs) {
    state = hash_netstring(input.name, state);
    state = hash_netstring(input.value, state);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(state));
  return hex;
}

Fingerprint machine_fingerprint(const BuildInfo& build, const SystemInfo& system) {
  Fingerprint fingerprint;
  fingerprint.inputs = fingerprint_inputs(build, system);
  fingerprint.hash = fingerprint_hash(fingerprint.inputs);
  return fingerprint;
}

}  // namespace gufo::diagnose
