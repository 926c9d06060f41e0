// report.json and report.md of a qualification, written into its --out directory (each
// written to a temporary name and renamed, so a failure never leaves half a report).
// report.json: {"verdict", "reason", "profile", "device", "revision", "started", "seconds", "baseline":
// {"dir", "diagnose"}, "candidate": {...}, "stages": [{"number", "name", "verdict", "reason",
// "seconds", "checks": [{"name", "verdict", "detail"}], "data", "plots"}]}.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "qualify/qualify.h"

namespace gufo::qualify {

nlohmann::json report_json(const Report& report);
std::string report_markdown(const Report& report);

Result<bool> write_report(const Report& report, const std::filesystem::path& out);

// `text` into `path` by way of a temporary name and a rename: never half a file.
Result<bool> write_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace gufo::qualify
