// `gufo diagnose` end to end: runs the built binary (GUFO_BINARY), parses --json, and checks
// it against build_info(), against a fingerprint recomputed from its own listed inputs, and
// against the reported compiler's own `--version`. Run: ctest --preset unit -R DiagnoseCommand
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "diagnose/build_info.h"
#include "diagnose/fingerprint.h"
#include "test_util.h"

namespace gufo::diagnose {
namespace {

using test_util::first_line;
using test_util::run_command;

nlohmann::json run_diagnose_json() {
  const test_util::CommandOutput result = run_command(std::string(GUFO_BINARY) + " diagnose --json");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  nlohmann::json doc = nlohmann::json::parse(result.out, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(doc.is_discarded()) << result.out;
  return doc;
}

TEST(DiagnoseCommand, JsonHasEverySection) {
  const nlohmann::json doc = run_diagnose_json();
  ASSERT_TRUE(doc.is_object());
  for (const char* key : {"gufo", "build", "os", "cpu", "memory", "gpus", "fingerprint"}) {
    EXPECT_TRUE(doc.contains(key)) << key;
  }
  const BuildInfo& build = build_info();
  EXPECT_EQ(doc["gufo"]["version"], std::string(build.version));
  EXPECT_EQ(doc["gufo"]["git_revision"], std::string(build.git_revision));
  EXPECT_EQ(doc["build"]["type"], std::string(build.build_type));
  EXPECT_EQ(doc["build"]["preset"], std::string(build.preset));
  EXPECT_EQ(doc["build"]["cxx_compiler"]["id"], std::string(build.cxx_compiler_id));
  EXPECT_EQ(doc["build"]["cxx_compiler"]["version"], std::string(build.cxx_compiler_version));
  EXPECT_EQ(doc["build"]["stdlib"]["name"], std::string(build.stdlib_name));
  EXPECT_EQ(doc["build"]["cuda"]["enabled"], build.with_cuda);
  EXPECT_GT(doc["cpu"]["logical_cores"].get<long>(), 0);
  EXPECT_TRUE(doc["cpu"]["simd"].is_array());
  EXPECT_GT(doc["memory"]["total_bytes"].get<uint64_t>(), 0u);
  EXPECT_TRUE(doc["gpus"]["devices"].is_array());
  // No devices always comes with the reason.
  if (doc["gpus"]["devices"].empty()) {
    EXPECT_TRUE(doc["gpus"]["error"].is_string());
  }
}

TEST(DiagnoseCommand, FingerprintIsTheHashOfTheListedInputs) {
  const nlohmann::json doc = run_diagnose_json();
  const nlohmann::json& fingerprint = doc["fingerprint"];
  ASSERT_TRUE(fingerprint["inputs"].is_object());
  std::vector<FingerprintInput> inputs;
  for (const auto& [name, value] : fingerprint["inputs"].items()) {
    inputs.push_back({name, value.get<std::string>()});
  }
  // nlohmann::json sorts keys on parse; the binary wrote them in hashing order, which is the
  // order fingerprint_inputs() gives. Reorder by that to recompute.
  std::vector<FingerprintInput> ordered;
  const SystemInfo system = collect_system_info();
  for (const FingerprintInput& expected : fingerprint_inputs(build_info(), system)) {
    ASSERT_TRUE(fingerprint["inputs"].contains(expected.name)) << expected.name;
    ordered.push_back({expected.name, fingerprint["inputs"][expected.name].get<std::string>()});
  }
  EXPECT_EQ(ordered.size(), inputs.size());
  EXPECT_EQ(fingerprint["hash"], fingerprint_hash(ordered));
  // Same binary, same machine: same fingerprint, run after run.
  EXPECT_EQ(run_diagnose_json()["fingerprint"]["hash"], fingerprint["hash"]);
}

TEST(DiagnoseCommand, ReportedCompilerIsTheOneThatSaysSo) {
  const nlohmann::json doc = run_diagnose_json();
  const nlohmann::json& compiler = doc["build"]["cxx_compiler"];
  const std::string path = compiler["path"].get<std::string>();
  EXPECT_EQ(path, GUFO_TEST_CXX_COMPILER);
  const test_util::CommandOutput version = run_command("'" + path + "' --version");
  ASSERT_EQ(version.exit_code, 0) << path;
  const std::string banner = first_line(version.out);
  EXPECT_EQ(compiler["banner"], banner);
  EXPECT_NE(banner.find(compiler["version"].get<std::string>()), std::string::npos)
      << banner << " vs " << compiler["version"];
  if (doc["build"]["cuda"]["enabled"].get<bool>()) {
    const std::string nvcc = doc["build"]["cuda"]["nvcc_path"].get<std::string>();
    EXPECT_EQ(nvcc, GUFO_TEST_CUDA_COMPILER);
    const test_util::CommandOutput nvcc_version = run_command("'" + nvcc + "' --version");
    ASSERT_EQ(nvcc_version.exit_code, 0) << nvcc;
    EXPECT_NE(nvcc_version.out.find("V" + doc["build"]["cuda"]["nvcc_version"].get<std::string>()), std::string::npos)
        << nvcc_version.out;
  }
}

TEST(DiagnoseCommand, HumanReportHasItsSections) {
  const test_util::CommandOutput result = run_command(std::string(GUFO_BINARY) + " diagnose");
  ASSERT_EQ(result.exit_code, 0);
  for (const char* title : {"Gufo\n", "Build\n", "CPU\n", "Memory\n", "GPUs\n", "Fingerprint\n"}) {
    EXPECT_NE(result.out.find(title), std::string::npos) << title;
  }
  const nlohmann::json doc = run_diagnose_json();
  EXPECT_NE(result.out.find(doc["fingerprint"]["hash"].get<std::string>()), std::string::npos);
}

TEST(DiagnoseCommand, VersionFlagShowsTheRevision) {
  const test_util::CommandOutput result = run_command(std::string(GUFO_BINARY) + " --version");
  ASSERT_EQ(result.exit_code, 0);
  const BuildInfo& build = build_info();
  EXPECT_EQ(first_line(result.out),
            "gufo " + std::string(build.version) + " (" + std::string(build.git_revision) + ")");
}

}  // namespace
}  // namespace gufo::diagnose
