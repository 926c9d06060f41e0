// The access log (see access_log.h).
#include "server/access_log.h"

#include <fmt/format.h>

namespace gufo::server {

AccessRecord& current_access_record() {
  thread_local AccessRecord record;
  return record;
}

std::string access_log_line(const std::string& remote_addr, const std::string& method, const std::string& path,
                            int status, const AccessRecord& record, std::chrono::steady_clock::time_point end) {
  const double ms = std::chrono::duration<double, std::milli>(end - record.start).count();
  std::string tokens;
  if (record.prompt_tokens >= 0) {
    tokens = fmt::format(" {}+{} tokens", record.prompt_tokens, std::max<int64_t>(record.completion_tokens, 0));
  }
  // The method and path are the client's: control characters and quotes would forge lines.
  const auto safe = [](const std::string& text) {
    std::string out;
    for (const char c : text) out += static_cast<unsigned char>(c) < 0x20 || c == '"' || c == 0x7f ? '?' : c;
    return out;
  };
  return fmt::format("gufo serve: {} \"{} {}\" {}{} {:.0f} ms\n", remote_addr.empty() ? "-" : remote_addr, safe(method),
                     safe(path), status, tokens, ms);
}

}  // namespace gufo::server
