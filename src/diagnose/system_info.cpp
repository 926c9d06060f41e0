// Reads the machine for `gufo diagnose` (see system_info.h): /proc, uname, sysconf, cpuid and,
// in a CUDA build, the backend's device query. Linux first; elsewhere fields read "unknown".
// Tested by tests/unit/diagnose.
#include "diagnose/system_info.h"

#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace gufo::diagnose {
namespace {

std::string read_text_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

// The value of the first "key<spaces>:<value>" line (the /proc/cpuinfo and meminfo shape).
std::string_view find_field(std::string_view text, std::string_view key) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon)) == key) {
      return trim(line.substr(colon + 1));
    }
  }
  return {};
}

// /etc/os-release PRETTY_NAME, without its quotes.
std::string read_distribution() {
  const std::string text = read_text_file("/etc/os-release");
  std::istringstream lines(text);
  std::string line;
  const std::string_view key = "PRETTY_NAME=";
  while (std::getline(lines, line)) {
    if (line.rfind(key, 0) != 0) continue;
    std::string value = line.substr(key.size());
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return "";
}

OsInfo collect_os(const utsname* uts) {
  OsInfo os;
  os.name = uts != nullptr ? uts->sysname : "unknown";
  os.kernel_release = uts != nullptr ? uts->release : "unknown";
  os.kernel_version = uts != nullptr ? uts->version : "unknown";
  os.distribution = read_distribution();
  return os;
}

CpuInfo collect_cpu(const utsname* uts) {
  CpuInfo cpu;
  cpu.model = parse_cpu_model(read_text_file("/proc/cpuinfo"));
  if (cpu.model.empty()) cpu.model = "unknown";
  cpu.architecture = uts != nullptr ? uts->machine : "unknown";
  cpu.hardware_concurrency = std::thread::hardware_concurrency();
  cpu.online_cores = sysconf(_SC_NPROCESSORS_ONLN);
  cpu.configured_cores = sysconf(_SC_NPROCESSORS_CONF);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) cpu.usable_cores = CPU_COUNT(&set);
  cpu.simd = detect_simd_features();
  return cpu;
}

MemoryInfo collect_memory() {
  MemoryInfo memory;
  const std::string meminfo = read_text_file("/proc/meminfo");
  memory.total_bytes = parse_meminfo_bytes(meminfo, "MemTotal");
  memory.available_bytes = parse_meminfo_bytes(meminfo, "MemAvailable");
  if (memory.total_bytes == 0) {
    struct sysinfo info {};
    if (sysinfo(&info) == 0) {
      memory.total_bytes = static_cast<uint64_t>(info.totalram) * info.mem_unit;
    }
  }
  return memory;
}

GpuInfo collect_gpu() {
  GpuInfo gpu;
  gpu.kernel_driver_version = parse_nvidia_driver_version(read_text_file("/proc/driver/nvidia/version"));
#if defined(GUFO_HAVE_CUDA)
  gpu.built_with_cuda = true;
  gpu.versions = cuda::query_library_versions();
  Result<std::vector<cuda::DeviceInfo>> devices = cuda::query_devices();
  if (devices.ok()) {
    gpu.devices = std::move(devices).value();
  } else {
    gpu.error = devices.error().message;
  }
#else
  gpu.error = "not built with CUDA (configure with the 'cuda' preset)";
#endif
  return gpu;
}

#if defined(__x86_64__) || defined(__i386__)
// XCR0, the register in which the OS says which register states it saves on a context switch.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

bool bit(uint32_t reg, int index) { return ((reg >> index) & 1u) != 0; }
#endif

}  // namespace

std::vector<std::string> detect_simd_features() {
  std::vector<std::string> features;
#if defined(__x86_64__) || defined(__i386__)
  // NOTE(diagnose): cpuid is read directly rather than through __builtin_cpu_supports so that
  // every compiler reports the same list: g++-12 and clang-16 know different feature names, and
  // the fingerprint's machine part must not depend on the toolchain. Bit positions: Intel SDM
  // vol. 2A, CPUID leaf 01H ECX and leaf 07H (sub-leaves 0 and 1); XCR0 bits: SDM vol. 1, 13.3.
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return features;
  const uint32_t leaf1_ecx = ecx;
  const bool os_saves_state = bit(leaf1_ecx, 27);  // OSXSAVE: xgetbv may be executed
  const uint64_t xcr0 = os_saves_state ? read_xcr0() : 0;
  // NOTE(diagnose): 0x6 = SSE and AVX (YMM) state; 0xE6 adds opmask, ZMM_Hi256 and Hi16_ZMM.
  const bool avx_state = (xcr0 & 0x6) == 0x6;
  const bool avx512_state = (xcr0 & 0xE6) == 0xE6;

  uint32_t leaf7_ebx = 0, leaf7_ecx = 0, leaf7_1_eax = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const uint32_t max_subleaf = eax;
    leaf7_ebx = ebx;
    leaf7_ecx = ecx;
    if (max_subleaf >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      leaf7_1_eax = eax;
    }
  }

  const bool avx512f = avx512_state && bit(leaf7_ebx, 16);
  struct Feature {
    const char* name;
    bool present;
  };
  const Feature table[] = {
      {"sse4.2", bit(leaf1_ecx, 20)},
      {"avx", avx_state && bit(leaf1_ecx, 28)},
      {"avx2", avx_state && bit(leaf7_ebx, 5)},
      {"fma", avx_state && bit(leaf1_ecx, 12)},
      {"f16c", avx_state && bit(leaf1_ecx, 29)},
      {"avx512f", avx512f},
      {"avx512bw", avx512f && bit(leaf7_ebx, 30)},
      {"avx512vl", avx512f && bit(leaf7_ebx, 31)},
      {"avx512_vnni", avx512f && bit(leaf7_ecx, 11)},
      {"avx512_bf16", avx512f && bit(leaf7_1_eax, 5)},
  };
  for (const Feature& feature : table) {
    if (feature.present) features.emplace_back(feature.name);
  }
#endif
  return features;
}

std::string parse_cpu_model(std::string_view cpuinfo) { return std::string(find_field(cpuinfo, "model name")); }

uint64_t parse_meminfo_bytes(std::string_view meminfo, std::string_view key) {
  const std::string_view value = find_field(meminfo, key);  // e.g. "16318480 kB"
  uint64_t number = 0;
  size_t pos = 0;
  while (pos < value.size() && std::isdigit(static_cast<unsigned char>(value[pos]))) {
    number = number * 10 + static_cast<uint64_t>(value[pos] - '0');
    ++pos;
  }
  if (pos == 0) return 0;
  // NOTE(diagnose): the kernel writes "kB" but means KiB (fs/proc/meminfo.c shifts by 10).
  return trim(value.substr(pos)) == "kB" ? number * 1024 : number;
}

std::string parse_nvidia_driver_version(std::string_view proc_text) {
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 ..." (or "Open
  // Kernel Module for x86_64"): the version is the first word made of digits and dots.
  const std::string_view line = find_field(proc_text, "NVRM version");
  size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && line[pos] == ' ') ++pos;
    size_t end = line.find(' ', pos);
    if (end == std::string_view::npos) end = line.size();
    const std::string_view word = line.substr(pos, end - pos);
    const bool numeric = !word.empty() && std::isdigit(static_cast<unsigned char>(word[0])) &&
                         word.find('.') != std::string_view::npos &&
                         word.find_first_not_of("0123456789.") == std::string_view::npos;
    if (numeric) return std::string(word);
    pos = end;
  }
  return "";
}

SystemInfo collect_system_info() {
  utsname uts{};
  const utsname* uts_ptr = uname(&uts) == 0 ? &uts : nullptr;
  SystemInfo info;
  info.os = collect_os(uts_ptr);
  info.cpu = collect_cpu(uts_ptr);
  info.memory = collect_memory();
  info.gpu = collect_gpu();
  return info;
}

}  // namespace gufo::diagnose
