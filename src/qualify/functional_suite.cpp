#include "qualify/functional_suite.h"

#include <regex>

#include "qualify/process.h"

namespace gufo::qualify {

namespace fs = std::filesystem;

namespace {

// node's TAP summary: "# pass 12" and "# fail 0".
int tap_count(const std::string& text, const char* what) {
  const std::regex line(std::string("# ") + what + " (\\d+)");
  std::smatch m;
  int count = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it) {
    count = std::stoi((*it)[1].str());
  }
  return count;
}

}  // namespace

Check suite_check(Context& context, StageResult& stage, const Build& build, const std::vector<std::string>& names,
                  const std::string& data_key) {
  std::vector<std::string> argv = {"node", "--test", "--test-concurrency=1", "--test-reporter=tap"};
  for (const std::string& p : names) argv.push_back(context.source("tests/functional/" + p + ".test.mjs").string());
  Check check{"functional suite on the " + build.role, Verdict::Fail, ""};
  const std::string key = data_key.empty() ? build.role : data_key;
  auto run = context.run(key + "-functional", argv, 1800,
                         {{"GUFO_BINARY", fs::absolute(build.gufo).string()},
                          {"GUFO_MODEL", fs::absolute(context.source("models/gufo-tiny-q8_0.gguf")).string()}});
  if (!run) {
    check.detail = run.error().message;
    return check;
  }
  auto text = read_text(run->out.string());
  const int passed = text ? tap_count(*text, "pass") : -1;
  const int failed = text ? tap_count(*text, "fail") : -1;
  stage.data[key] = {{"passed", passed}, {"failed", failed}, {"seconds", run->outcome.seconds}};
  check.detail = std::to_string(passed) + " tests passed, " + std::to_string(failed) + " failed";
  if (run->succeeded() && passed > 0 && failed == 0) {
    check.verdict = Verdict::Pass;
  } else if (passed <= 0 && failed <= 0) {
    check.detail = "no test ran: " + run->why();
  } else {
    check.detail += "; " + run->why();
  }
  return check;
}

}  // namespace gufo::qualify
