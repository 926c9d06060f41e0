#include "qualify/build.h"

#include <unistd.h>

#include "qualify/json_access.h"
#include "qualify/process.h"

namespace gufo::qualify {

namespace fs = std::filesystem;

std::string Build::label() const { return role + " " + dir.string() + (compiler.empty() ? "" : " (" + compiler + ")"); }

Result<Build> open_build(const std::string& role, const fs::path& dir, const fs::path& logs_dir) {
  Build build;
  build.role = role;
  build.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return Error{role + " " + dir.string() + ": no such build directory"};
  build.gufo = dir / "bin" / "gufo";
  if (::access(build.gufo.c_str(), X_OK) != 0) {
    return Error{role + " " + dir.string() + ": no bin/gufo (build it first, e.g. cmake --workflow --preset default)"};
  }
  const fs::path log = logs_dir / (role + "-diagnose.json");
  ProcessSpec spec;
  spec.argv = {build.gufo.string(), "diagnose", "--json"};
  spec.stdout_path = log.string();
  spec.stderr_path = (logs_dir / (role + "-diagnose.err")).string();
  spec.timeout_s = 60;
  auto run = run_process(spec);
  if (!run) return run.error();
  if (!run->succeeded()) {
    return Error{role + " " + build.gufo.string() + ": `gufo diagnose --json` failed (" + run->describe(60) + ")"};
  }
  auto text = read_text(log.string());
  if (!text) return text.error();
  build.diagnose = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (build.diagnose.is_discarded() || !build.diagnose.is_object()) {
    return Error{role + " " + build.gufo.string() + ": `gufo diagnose --json` printed no JSON object"};
  }
  const nlohmann::json& built = member(build.diagnose, "build");
  const nlohmann::json& compiler = member(built, "cxx_compiler");
  build.revision = string_of(member(member(build.diagnose, "gufo"), "git_revision"));
  build.compiler = string_of(member(compiler, "id")) + " " + string_of(member(compiler, "version"));
  build.fingerprint = string_of(member(member(build.diagnose, "fingerprint"), "hash"));
  build.cuda = member(member(built, "cuda"), "enabled") == true;
  if (build.revision.empty()) return Error{role + " " + build.gufo.string() + ": diagnose names no git revision"};
  return build;
}

Result<bool> check_comparable(const Build& baseline, const Build& candidate, const std::string& device) {
  std::error_code ec;
  if (fs::equivalent(baseline.dir, candidate.dir, ec)) {
    return Error{"baseline and candidate are the same directory (" + baseline.dir.string() + ")"};
  }
  if (baseline.revision != candidate.revision) {
    return Error{"baseline " + baseline.dir.string() + " is revision " + baseline.revision + ", candidate " +
                 candidate.dir.string() + " is " + candidate.revision +
                 ": qualify compares two builds of one revision (rebuild one of them)"};
  }
  if (device == "cuda") {
    for (const Build* build : {&baseline, &candidate}) {
      if (!build->cuda) return Error{build->label() + ": built without the CUDA backend (--device cuda)"};
    }
  }
  return true;
}

}  // namespace gufo::qualify
