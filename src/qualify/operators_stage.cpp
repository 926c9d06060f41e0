// Stage 1: the GPU kernels' resources, baseline against candidate (kernel_resources.h), and
// the operator oracle suite on the candidate: on the GPU tests/ops (every CUDA operator against
// its CPU twin), on the CPU the CPU backend's fast kernels against their scalar references
// and the quantization oracle. A suite that ran no case fails: a GPU that was not found must
// not read as a pass.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "qualify/json_access.h"
#include "qualify/kernel_resources.h"
#include "qualify/stages.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

std::string find_cuobjdump() {
  for (const char* root : {static_cast<const char*>(std::getenv("CUDA_HOME")), "/usr/local/cuda"}) {
    if (root == nullptr) continue;
    const fs::path path = fs::path(root) / "bin" / "cuobjdump";
    std::error_code ec;
    if (fs::exists(path, ec)) return path.string();
  }
  return "cuobjdump";  // from PATH, if anywhere
}

std::string resource_table(const ResourceDiff& diff) {
  std::ostringstream md;
  md << "| kernel | arch | registers | stack | shared | local | verdict |\n|---|---|---|---|---|---|---|\n";
  for (const KernelChange& c : diff.changed) {
    const auto pair = [](int a, int b) { return std::to_string(a) + (a == b ? "" : " -> " + std::to_string(b)); };
    std::string verdict = "allowed";
    if (!c.failures.empty()) {
      verdict = "FAIL:";
      for (const std::string& f : c.failures) verdict += " " + f + ";";
    }
    md << "| `" << c.baseline.name << "` | " << c.baseline.arch << " | "
       << pair(c.baseline.registers, c.candidate.registers) << " | " << pair(c.baseline.stack, c.candidate.stack)
       << " | " << pair(c.baseline.shared, c.candidate.shared) << " | " << pair(c.baseline.local, c.candidate.local)
       << " | " << verdict << " |\n";
  }
  return md.str();
}

Check kernel_resources_check(Context& context, StageResult& stage) {
  Check check{"kernel resources (cuobjdump)", Verdict::Skip, ""};
  if (context.options.device != "cuda") {
    check.detail = "a CPU qualification: no GPU kernels to compare";
    return check;
  }
  const std::string cuobjdump = find_cuobjdump();
  std::vector<KernelResources> kernels[2];
  for (const bool candidate : {false, true}) {
    const Build& build = context.build(candidate);
    auto run = context.run(build.role + "-cuobjdump", {cuobjdump, "--dump-resource-usage", build.gufo.string()}, 300);
    if (!run || !run->succeeded()) {
      check.verdict = Verdict::Fail;
      check.detail = build.label() + ": cuobjdump failed: " + (run ? run->why() : run.error().message);
      return check;
    }
    auto text = read_text(run->out.string());
    kernels[candidate] = parse_resource_usage(text ? *text : "");
    if (kernels[candidate].empty()) {
      check.verdict = Verdict::Fail;
      check.detail = build.label() + ": cuobjdump listed no kernel in bin/gufo";
      return check;
    }
  }
  const ResourceDiff diff = diff_resources(kernels[0], kernels[1]);
  check.verdict = diff.failed() ? Verdict::Fail : Verdict::Pass;
  size_t failing = 0;
  for (const KernelChange& c : diff.changed) failing += c.failures.empty() ? 0 : 1;
  check.detail = std::to_string(kernels[1].size()) + " kernels: " + std::to_string(diff.unchanged) + " unchanged, " +
                 std::to_string(diff.changed.size()) + " changed (" + std::to_string(failing) +
                 " against the rules), " + std::to_string(diff.only_baseline.size()) + " only in the baseline, " +
                 std::to_string(diff.only_candidate.size()) + " only in the candidate (" +
                 std::to_string(diff.unmatched_spilling.size()) + " of them spilling)";
  stage.data["kernels"] = {{"baseline", kernels[0].size()},
                           {"candidate", kernels[1].size()},
                           {"unchanged", diff.unchanged},
                           {"changed", diff.changed.size()},
                           {"failing", failing},
                           {"only_baseline", diff.only_baseline.size()},
                           {"only_candidate", diff.only_candidate.size()}};
  if (!diff.changed.empty()) stage.markdown += "Kernels whose resources changed:\n\n" + resource_table(diff) + "\n";
  return check;
}

struct GtestCounts {
  int tests = 0;
  int failures = 0;
  int skipped = 0;
  int ran() const { return tests - skipped; }
};

Result<GtestCounts> read_gtest_json(const fs::path& path) {
  auto text = read_text(path.string());
  if (!text) return text.error();
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Error{path.string() + ": not a googletest JSON report"};
  GtestCounts counts;
  const std::optional<double> tests = finite(member(j, "tests"));
  const std::optional<double> failures = finite(member(j, "failures"));
  if (!tests || !failures) return Error{path.string() + ": no test counts in the googletest JSON report"};
  counts.tests = static_cast<int>(*tests);
  counts.failures = static_cast<int>(*failures);
  const nlohmann::json& suites = member(j, "testsuites");
  for (const nlohmann::json& suite : suites.is_array() ? suites : nlohmann::json::array()) {
    const nlohmann::json& cases = member(suite, "testsuite");
    for (const nlohmann::json& test : cases.is_array() ? cases : nlohmann::json::array()) {
      if (string_of(member(test, "result")) == "SKIPPED") ++counts.skipped;
    }
  }
  return counts;
}

Check oracle_suite_check(Context& context, StageResult& stage, const std::string& relative) {
  const Build& build = context.candidate;
  const fs::path program = build.program(relative);
  Check check{"operator oracles: " + relative, Verdict::Fail, ""};
  std::error_code ec;
  if (!fs::exists(program, ec)) {
    check.detail = build.label() + ": no " + relative + " (configure the build with its tests, GUFO_TESTS=ON)";
    return check;
  }
  const std::string name = "candidate-" + program.filename().string();
  const fs::path json = context.work / (name + ".json");
  fs::remove(json, ec);  // an earlier qualification's report must not stand in for this one
  auto run = context.run(name, {program.string(), "--gtest_output=json:" + json.string()}, 1200);
  if (!run) {
    check.detail = run.error().message;
    return check;
  }
  auto counts = read_gtest_json(json);
  if (!counts) {
    check.detail = run->why();
    return check;
  }
  stage.data["suites"][relative] = {
      {"tests", counts->tests}, {"failures", counts->failures}, {"skipped", counts->skipped}};
  check.detail = std::to_string(counts->ran()) + " cases ran, " + std::to_string(counts->failures) + " failed, " +
                 std::to_string(counts->skipped) + " skipped";
  if (counts->ran() == 0) {
    check.detail = "no case ran (" + std::to_string(counts->skipped) + " skipped): nothing was checked";
  } else if (run->succeeded() && counts->failures == 0) {
    check.verdict = Verdict::Pass;
  } else if (counts->failures == 0) {
    check.detail += "; " + run->why();
  }
  return check;
}

}  // namespace

StageResult run_operators_stage(Context& context) {
  StageResult stage;
  stage.number = 1;
  stage.name = "operators";
  stage.checks.push_back(kernel_resources_check(context, stage));
  if (context.options.device == "cuda") {
    stage.checks.push_back(oracle_suite_check(context, stage, "tests/ops/ops_test"));
  } else {
    stage.checks.push_back(oracle_suite_check(context, stage, "tests/unit/backend/cpu_ops_test"));
    stage.checks.push_back(oracle_suite_check(context, stage, "tests/unit/quant/quant_test"));
  }
  stage.conclude();
  return stage;
}

}  // namespace gufo::qualify
