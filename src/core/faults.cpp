#include "core/faults.h"

#include <charconv>
#include <cstdlib>
#include <set>
#include <string>

namespace gufo {

namespace {

constexpr std::string_view kKnown = "request_delay_ms, forward_oom_at, device_lost_at";

// `value` as a whole number in [low, high], or an error naming the fault and the range.
Result<int64_t> whole_number(std::string_view name, std::string_view value, int64_t low, int64_t high,
                             std::string_view what) {
  int64_t n = -1;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (ec != std::errc{} || end != value.data() + value.size() || n < low || n > high) {
    return Error{"GUFO_FAULTS: " + std::string(name) + ": '" + std::string(value) + "' is not " + std::string(what) +
                 " from " + std::to_string(low) + " to " + std::to_string(high)};
  }
  return n;
}

}  // namespace

std::string Faults::describe() const {
  std::string out;
  const auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "; ") + part; };
  if (request_delay.count() > 0) {
    add("every request waits " + std::to_string(request_delay.count()) + " ms first");
  }
  if (forward_oom_at > 0) add("forward call " + std::to_string(forward_oom_at) + " fails as out of memory");
  if (device_lost_at > 0) add("the device is lost at forward call " + std::to_string(device_lost_at));
  return out;
}

Result<Faults> parse_faults(std::string_view spec) {
  Faults faults;
  std::set<std::string, std::less<>> seen;
  constexpr int64_t kMaxCall = int64_t{1} << 40;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty() || (comma != std::string_view::npos && spec.empty())) {
      return Error{"GUFO_FAULTS: an empty item (NAME=VALUE, separated by single commas)"};
    }
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    if (name != "request_delay_ms" && name != "forward_oom_at" && name != "device_lost_at") {
      return Error{"GUFO_FAULTS: unknown fault '" + std::string(name) + "' (known: " + std::string(kKnown) + ")"};
    }
    if (!seen.emplace(name).second) return Error{"GUFO_FAULTS: " + std::string(name) + " given twice"};
    if (name == "request_delay_ms") {
      GUFO_ASSIGN_OR_RETURN(const int64_t ms, whole_number(name, value, 0, 60000, "milliseconds"));
      faults.request_delay = std::chrono::milliseconds(ms);
    } else {
      GUFO_ASSIGN_OR_RETURN(const int64_t call, whole_number(name, value, 1, kMaxCall, "a forward call"));
      (name == "forward_oom_at" ? faults.forward_oom_at : faults.device_lost_at) = call;
    }
  }
  return faults;
}

Result<Faults> faults_from_environment() {
  const char* spec = std::getenv("GUFO_FAULTS");
  return spec == nullptr ? Result<Faults>(Faults{}) : parse_faults(spec);
}

}  // namespace gufo
