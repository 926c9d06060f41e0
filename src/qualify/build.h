// One build under qualification: its directory, its `gufo`, and what `gufo diagnose --json`
// says of it (revision, toolchain, fingerprint). Opening a build checks what every stage needs.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace gufo::qualify {

struct Build {
  std::string role;  // "baseline" or "candidate"
  std::filesystem::path dir;
  std::filesystem::path gufo;  // dir/bin/gufo
  nlohmann::json diagnose;     // `gufo diagnose --json`
  std::string revision;        // gufo.git_revision
  std::string compiler;        // "GNU 12.2.0"
  std::string fingerprint;     // fingerprint.hash
  bool cuda = false;           // built with the CUDA backend

  // "candidate build/clang (Clang 16.0.6)": how reports and errors name it.
  std::string label() const;
  // A program of the build, e.g. "tests/ops/ops_test".
  std::filesystem::path program(const std::string& relative) const { return dir / relative; }
};

// Checks the directory and its bin/gufo, and reads `gufo diagnose --json` (its output kept in
// logs_dir/ROLE-diagnose.json).
Result<Build> open_build(const std::string& role, const std::filesystem::path& dir,
                         const std::filesystem::path& logs_dir);

// Two builds that can be compared: different directories, one revision; for --device cuda,
// both with the CUDA backend.
Result<bool> check_comparable(const Build& baseline, const Build& candidate, const std::string& device);

}  // namespace gufo::qualify
