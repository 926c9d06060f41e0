// `gufo diagnose [--json]`: the toolchain this binary was built with, the machine it runs on,
// and the machine fingerprint (diagnose/fingerprint.h). Human-readable sections by default,
// one JSON document with --json. Tested by tests/unit/diagnose (runs the binary).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "diagnose/build_info.h"
#include "diagnose/fingerprint.h"
#include "diagnose/system_info.h"

namespace gufo::cli {
namespace {

using Json = nlohmann::ordered_json;  // keeps keys in the order written, for readers

// An absent value (CUDA fields of a CPU-only build) is null in JSON, not "".
Json string_or_null(std::string_view value) { return value.empty() ? Json(nullptr) : Json(std::string(value)); }

std::string gib_text(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ull << 30));
  return text;
}

Json build_json(const diagnose::BuildInfo& build) {
  Json cuda = {{"enabled", build.with_cuda},
               {"nvcc_version", string_or_null(build.nvcc_version)},
               {"nvcc_path", string_or_null(build.nvcc_path)},
               {"nvcc_banner", string_or_null(build.nvcc_banner)},
               {"toolkit_version", string_or_null(build.cuda_toolkit_version)},
               {"cudart_header_version", string_or_null(build.cudart_header_version)},
               {"cublas_header_version", string_or_null(build.cublas_header_version)},
               {"host_compiler", string_or_null(build.cuda_host_compiler)},
               {"host_compiler_banner", string_or_null(build.cuda_host_compiler_banner)},
               {"architectures", string_or_null(build.cuda_architectures)}};
  return {{"type", build.build_type},
          {"preset", build.preset},
          {"cxx_compiler",
           {{"id", build.cxx_compiler_id},
            {"version", build.cxx_compiler_version},
            {"path", build.cxx_compiler_path},
            {"banner", build.cxx_compiler_banner}}},
          {"cxx_flags", build.cxx_flags},
          {"stdlib", {{"name", build.stdlib_name}, {"version", build.stdlib_version}}},
          {"cuda", std::move(cuda)}};
}

Json gpus_json(const diagnose::GpuInfo& gpu) {
  Json devices = Json::array();
  for (const cuda::DeviceInfo& device : gpu.devices) {
    devices.push_back({{"index", device.index},
                       {"name", device.name},
                       {"compute_capability", std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor)},
                       {"total_memory_bytes", device.total_memory_bytes},
                       {"multiprocessors", device.multiprocessor_count},
                       {"pci_bus_id", device.pci_bus_id},
                       {"uuid", device.uuid}});
  }
  return {{"built_with_cuda", gpu.built_with_cuda},
          {"kernel_driver_version", string_or_null(gpu.kernel_driver_version)},
          {"driver_version", string_or_null(cuda::format_cuda_version(gpu.versions.driver))},
          {"runtime_version", string_or_null(cuda::format_cuda_version(gpu.versions.runtime))},
          {"cublas_version", string_or_null(cuda::format_blas_version(static_cast<uint64_t>(gpu.versions.cublas)))},
          {"cublaslt_version", string_or_null(cuda::format_blas_version(gpu.versions.cublaslt))},
          {"devices", std::move(devices)},
          {"error", string_or_null(gpu.error)}};
}

Json diagnose_json(const diagnose::BuildInfo& build, const diagnose::SystemInfo& system,
                   const diagnose::Fingerprint& fingerprint) {
  Json inputs = Json::object();
  for (const diagnose::FingerprintInput& input : fingerprint.inputs) {
    inputs[input.name] = input.value;
  }
  const diagnose::CpuInfo& cpu = system.cpu;
  return {
      {"gufo", {{"version", build.version}, {"git_revision", build.git_revision}}},
      {"build", build_json(build)},
      {"os",
       {{"name", system.os.name},
        {"kernel_release", system.os.kernel_release},
        {"kernel_version", system.os.kernel_version},
        {"distribution", string_or_null(system.os.distribution)}}},
      {"cpu",
       {{"model", cpu.model},
        {"architecture", cpu.architecture},
        {"logical_cores", cpu.online_cores},
        {"configured_cores", cpu.configured_cores},
        {"usable_cores", cpu.usable_cores},
        {"hardware_concurrency", cpu.hardware_concurrency},
        {"simd", cpu.simd}}},
      {"memory", {{"total_bytes", system.memory.total_bytes}, {"available_bytes", system.memory.available_bytes}}},
      {"gpus", gpus_json(system.gpu)},
      {"fingerprint",
       {{"algorithm", "fnv1a-64 over netstrings of name, value (see diagnose/fingerprint.h)"},
        {"inputs", std::move(inputs)},
        {"hash", fingerprint.hash}}},
  };
}

// --- human-readable report -------------------------------------------------------------------

void section(std::string_view title) { std::printf("%.*s\n", static_cast<int>(title.size()), title.data()); }

void row(std::string_view key, std::string_view value) {
  // NOTE(diagnose): 28 columns fit the longest fingerprint input name
  // ("build.cublas_header_version") plus a space.
  std::printf("  %-28.*s %.*s\n", static_cast<int>(key.size()), key.data(), static_cast<int>(value.size()),
              value.data());
}

std::string or_dash(std::string_view value) { return value.empty() ? std::string("-") : std::string(value); }

void print_report(const diagnose::BuildInfo& build, const diagnose::SystemInfo& system,
                  const diagnose::Fingerprint& fingerprint) {
  section("Gufo");
  row("version", build.version);
  row("git revision", build.git_revision);

  section("Build");
  row("build type", build.build_type);
  row("preset", build.preset);
  row("C++ compiler", std::string(build.cxx_compiler_id) + " " + std::string(build.cxx_compiler_version) + " (" +
                          std::string(build.cxx_compiler_path) + ")");
  row("", build.cxx_compiler_banner);
  row("C++ flags", or_dash(build.cxx_flags));
  row("C++ library", std::string(build.stdlib_name) + " " + std::string(build.stdlib_version));
  if (build.with_cuda) {
    row("nvcc", std::string(build.nvcc_version) + " (" + std::string(build.nvcc_path) + ")");
    row("CUDA toolkit", build.cuda_toolkit_version);
    row("cudart headers", build.cudart_header_version);
    row("cuBLAS headers", build.cublas_header_version);
    row("nvcc host compiler",
        std::string(build.cuda_host_compiler) + " (" + std::string(build.cuda_host_compiler_banner) + ")");
    row("CUDA architectures", build.cuda_architectures);
  } else {
    row("CUDA", "not built with CUDA");
  }

  section("OS");
  row("system", system.os.name + " " + system.os.kernel_release);
  row("kernel build", system.os.kernel_version);
  row("distribution", or_dash(system.os.distribution));

  const diagnose::CpuInfo& cpu = system.cpu;
  section("CPU");
  row("model", cpu.model);
  row("architecture", cpu.architecture);
  row("logical cores", std::to_string(cpu.online_cores) + " online, " + std::to_string(cpu.configured_cores) +
                           " configured, " + std::to_string(cpu.usable_cores) + " usable by this process");
  std::string simd;
  for (const std::string& feature : cpu.simd) simd += (simd.empty() ? "" : " ") + feature;
  row("SIMD", simd.empty() ? "none" : simd);

  section("Memory");
  row("total", gib_text(system.memory.total_bytes) + " (" + std::to_string(system.memory.total_bytes) + " bytes)");
  row("available", gib_text(system.memory.available_bytes));

  const diagnose::GpuInfo& gpu = system.gpu;
  section("GPUs");
  row("kernel driver", or_dash(gpu.kernel_driver_version));
  if (gpu.built_with_cuda) {
    row("CUDA driver API", or_dash(cuda::format_cuda_version(gpu.versions.driver)));
    row("CUDA runtime", or_dash(cuda::format_cuda_version(gpu.versions.runtime)));
    row("cuBLAS runtime", or_dash(cuda::format_blas_version(static_cast<uint64_t>(gpu.versions.cublas))));
    row("cuBLASLt runtime", or_dash(cuda::format_blas_version(gpu.versions.cublaslt)));
  }
  for (const cuda::DeviceInfo& device : gpu.devices) {
    row("device " + std::to_string(device.index),
        device.name + ", compute " + std::to_string(device.cc_major) + "." + std::to_string(device.cc_minor) + ", " +
            gib_text(device.total_memory_bytes) + ", " + std::to_string(device.multiprocessor_count) + " SMs");
    row("", "PCI " + device.pci_bus_id + ", " + device.uuid);
  }
  if (!gpu.error.empty()) row("devices", gpu.error);

  section("Fingerprint");
  row("hash", fingerprint.hash);
  for (const diagnose::FingerprintInput& input : fingerprint.inputs) {
    row(input.name, input.value);
  }
}

}  // namespace

Command register_diagnose(CLI::App& root) {
  CLI::App* app =
      root.add_subcommand("diagnose", "Build toolchain, CPU, memory, GPUs, driver and the machine fingerprint");
  auto json = std::make_shared<bool>(false);
  app->add_flag("--json", *json, "Print one JSON document instead of the report");
  return {app, [json]() {
            const diagnose::BuildInfo& build = diagnose::build_info();
            const diagnose::SystemInfo system = diagnose::collect_system_info();
            const diagnose::Fingerprint fingerprint = diagnose::machine_fingerprint(build, system);
            if (*json) {
              std::printf("%s\n", diagnose_json(build, system, fingerprint).dump(2).c_str());
            } else {
              print_report(build, system, fingerprint);
            }
            return 0;
          }};
}

}  // namespace gufo::cli
