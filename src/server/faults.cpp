#include "server/faults.h"

#include <charconv>
#include <string>
#include <utility>

namespace gufo::server {

Result<Faults> parse_faults(std::string_view spec) {
  Faults faults;
  bool delay_seen = false;
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty() || (comma != std::string_view::npos && spec.empty())) {
      return Error{"GUFO_FAULTS: an empty item (NAME=VALUE, separated by single commas)"};
    }
    const size_t eq = item.find('=');
    const std::string_view name = item.substr(0, eq);
    if (name == "request_delay_ms" && std::exchange(delay_seen, true)) {
      return Error{"GUFO_FAULTS: request_delay_ms given twice"};
    }
    if (name != "request_delay_ms") {
      return Error{"GUFO_FAULTS: unknown fault '" + std::string(name) + "' (known: request_delay_ms)"};
    }
    const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    int ms = -1;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), ms);
    if (ec != std::errc{} || end != value.data() + value.size() || ms < 0 || ms > 60000) {
      return Error{"GUFO_FAULTS: request_delay_ms: '" + std::string(value) + "' is not milliseconds from 0 to 60000"};
    }
    faults.request_delay = std::chrono::milliseconds(ms);
  }
  return faults;
}

}  // namespace gufo::server
