// A passing qualification, kept: `gufo qualify --record` copies its report (report.md,
// report.json, the plots; not the logs) into the source tree's qualification/NAME/ and
// rewrites README.md's qualified-toolchain line from it, the line between the markers
//   <!-- qualified-toolchain -->
//   Qualified toolchain: ...
//   <!-- /qualified-toolchain -->
// Stage 6 checks that the line is the one the newest passing report there gives, so that a
// qualification recorded without its README line, or a line edited by hand, is caught.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "qualify/stage.h"

namespace gufo::qualify {

// NAME for a report: DATE-REVISION-DEVICE-PROFILE (e.g. 2026-12-06-41b3055c3850-cpu-quick).
std::string record_name(const nlohmann::json& report);

// The README line for a passing report recorded under `link` (a path relative to README.md).
std::string qualified_line(const nlohmann::json& report, const std::string& link);

// `readme` with the text between its markers replaced by `line`; an error names what is
// missing when the markers are not there once each, in order.
Result<std::string> with_qualified_line(const std::string& readme, const std::string& line);

// The line between `readme`'s markers, or an error as with_qualified_line's.
Result<std::string> qualified_line_of(const std::string& readme);

struct PassingReport {
  std::filesystem::path path;  // its report.json; empty when there is none
  nlohmann::json report;
};

// The newest (by "started") report.json with verdict "pass" in a directory of
// qualification/*/.
Result<PassingReport> newest_passing_report(const std::filesystem::path& qualification_dir);

// Records `report` (report_json of a qualification whose files are in `out`): copies its
// report.md, report.json and plots into source/qualification/NAME and rewrites
// source/README.md; returns qualification/NAME. An existing NAME is an error (nothing the
// user had is overwritten), as is a report that did not pass or of a modified tree.
Result<std::filesystem::path> record_report(const nlohmann::json& report, const std::filesystem::path& out,
                                            const std::filesystem::path& source);

// Stage 6's check: README.md's line is the one the newest passing report gives.
Check readme_line_check(const std::filesystem::path& source);

}  // namespace gufo::qualify
