#include "qualify/kernel_resources.h"

#include <charconv>
#include <map>
#include <regex>
#include <utility>

namespace gufo::qualify {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// "REG:40 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:568 ..." -> the four fields we gate on.
void read_fields(std::string_view line, KernelResources& k) {
  while (!line.empty()) {
    const size_t space = line.find(' ');
    const std::string_view field = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view{} : trim(line.substr(space + 1));
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = field.substr(0, colon);
    const std::string_view digits = field.substr(colon + 1);
    int value = 0;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), value).ec != std::errc{}) continue;
    if (key == "REG") k.registers = value;
    if (key == "STACK") k.stack = value;
    if (key == "SHARED") k.shared = value;
    if (key == "LOCAL") k.local = value;
  }
}

}  // namespace

std::vector<KernelResources> parse_resource_usage(std::string_view listing) {
  std::vector<KernelResources> kernels;
  std::string arch;
  bool expect_fields = false;
  while (!listing.empty()) {
    const size_t eol = listing.find('\n');
    const std::string_view line = trim(listing.substr(0, eol));
    listing = eol == std::string_view::npos ? std::string_view{} : listing.substr(eol + 1);
    if (line.rfind("arch = ", 0) == 0) {
      arch = std::string(line.substr(7));
    } else if (line.rfind("Function ", 0) == 0 && line.back() == ':') {
      KernelResources k;
      k.arch = arch;
      k.name = std::string(line.substr(9, line.size() - 10));
      kernels.push_back(std::move(k));
      expect_fields = true;
    } else if (expect_fields && line.rfind("REG:", 0) == 0) {
      read_fields(line, kernels.back());
      expect_fields = false;
    }
  }
  return kernels;
}

int warps_per_sm_by_registers(int registers) {
  constexpr int kRegistersPerSm = 65536;
  constexpr int kAllocationUnit = 256;  // registers, a warp's allocation granularity
  constexpr int kMaxWarps = 64;
  if (registers <= 0) return kMaxWarps;
  const int per_warp = (registers * 32 + kAllocationUnit - 1) / kAllocationUnit * kAllocationUnit;
  const int warps = kRegistersPerSm / per_warp;
  return warps < kMaxWarps ? warps : kMaxWarps;
}

bool ResourceDiff::failed() const {
  if (!unmatched_spilling.empty()) return true;
  for (const KernelChange& change : changed) {
    if (!change.failures.empty()) return true;
  }
  return false;
}

std::string stable_kernel_name(std::string_view name) {
  // nvcc names an anonymous namespace _GLOBAL__N__<8 hex>_<len>_<file>_cu_<8 hex>; the hex
  // digits may differ between builds, so they are zeroed (the length prefixes stay right).
  static const std::regex anonymous("_GLOBAL__N__[0-9a-f]{8}_([0-9]+_[A-Za-z0-9_]*?_cu)_[0-9a-f]{8}");
  return std::regex_replace(std::string(name), anonymous, "_GLOBAL__N__00000000_$1_00000000");
}

ResourceDiff diff_resources(const std::vector<KernelResources>& baseline,
                            const std::vector<KernelResources>& candidate) {
  std::map<std::pair<std::string, std::string>, const KernelResources*> base_by_key;
  for (const KernelResources& k : baseline) base_by_key[{k.arch, stable_kernel_name(k.name)}] = &k;
  ResourceDiff diff;
  for (const KernelResources& c : candidate) {
    const auto it = base_by_key.find({c.arch, stable_kernel_name(c.name)});
    if (it == base_by_key.end()) {
      diff.only_candidate.push_back(c);
      // A kernel without a baseline twin cannot be compared; it must at least not spill.
      if (c.local > 0 || c.stack > 0) diff.unmatched_spilling.push_back(c);
      continue;
    }
    const KernelResources& b = *it->second;
    base_by_key.erase(it);
    if (b.registers == c.registers && b.stack == c.stack && b.shared == c.shared && b.local == c.local) {
      ++diff.unchanged;
      continue;
    }
    KernelChange change{b, c, {}};
    if (c.local > b.local) {
      change.failures.push_back("local memory " + std::to_string(b.local) + " -> " + std::to_string(c.local) +
                                " bytes a thread (spills)");
    }
    if (c.stack > b.stack) {
      change.failures.push_back("stack " + std::to_string(b.stack) + " -> " + std::to_string(c.stack) +
                                " bytes a thread");
    }
    if (c.shared != b.shared) {
      // Static shared memory is the source's to decide; a toolchain that changes it changes
      // how many blocks an SM holds.
      change.failures.push_back("static shared memory " + std::to_string(b.shared) + " -> " + std::to_string(c.shared) +
                                " bytes a block");
    }
    const int warps_before = warps_per_sm_by_registers(b.registers);
    const int warps_after = warps_per_sm_by_registers(c.registers);
    if (warps_after < warps_before) {
      change.failures.push_back("registers " + std::to_string(b.registers) + " -> " + std::to_string(c.registers) +
                                ": occupancy " + std::to_string(warps_before) + " -> " + std::to_string(warps_after) +
                                " warps an SM");
    }
    diff.changed.push_back(std::move(change));
  }
  for (const auto& [key, k] : base_by_key) diff.only_baseline.push_back(*k);
  return diff;
}

}  // namespace gufo::qualify
