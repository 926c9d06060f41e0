#include "qualify/context.h"

namespace gufo::qualify {

std::string Context::Run::why() const {
  std::string tail = read_tail(err.string(), 400);
  if (tail.find_first_not_of(" \n\r\t") == std::string::npos) tail = read_tail(out.string(), 400);
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
  const size_t eol = tail.rfind('\n');
  std::string last = eol == std::string::npos ? tail : tail.substr(eol + 1);
  return describe() + (last.empty() ? "" : ": " + last) + " (logs/" + err.filename().string() + ")";
}

Result<Context::Run> Context::run(const std::string& log_name, std::vector<std::string> argv, double timeout_s,
                                  std::vector<std::pair<std::string, std::string>> env) const {
  Run result;
  result.out = logs / (log_name + ".out");
  result.err = logs / (log_name + ".err");
  result.timeout_s = timeout_s;
  ProcessSpec spec;
  spec.argv = std::move(argv);
  spec.env = std::move(env);
  spec.stdout_path = result.out.string();
  spec.stderr_path = result.err.string();
  spec.timeout_s = timeout_s;
  auto outcome = run_process(spec);
  if (!outcome) return outcome.error();
  result.outcome = *outcome;
  return result;
}

std::vector<std::string> Context::device_flags() const {
  return {"--device", options.device, "-t", std::to_string(options.threads)};
}

}  // namespace gufo::qualify
