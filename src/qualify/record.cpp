#include "qualify/record.h"

#include "qualify/json_access.h"
#include "qualify/process.h"
#include "qualify/report.h"

namespace gufo::qualify {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kBegin = "<!-- qualified-toolchain -->\n";
constexpr std::string_view kEnd = "<!-- /qualified-toolchain -->";

// The string at `path` in j, or "" where it is missing or not a string.
std::string text_at(const nlohmann::json& j, std::initializer_list<const char*> path) {
  return string_of(member_at(j, path));
}

// A build as the line names it: the C++ compiler's banner, and nvcc's version and
// architectures for CUDA builds.
std::string toolchain(const nlohmann::json& build) {
  std::string name = text_at(build, {"diagnose", "build", "cxx_compiler", "banner"});
  if (name.empty()) name = "unknown compiler";
  const std::string nvcc = text_at(build, {"diagnose", "build", "cuda", "nvcc_version"});
  if (!nvcc.empty()) {
    name += " + nvcc " + nvcc;
    const std::string arch = text_at(build, {"diagnose", "build", "cuda", "architectures"});
    if (!arch.empty()) name += " (" + arch + ")";
  }
  return name;
}

}  // namespace

std::string record_name(const nlohmann::json& report) {
  const std::string started = text_at(report, {"started"});
  std::string revision = text_at(report, {"revision"});
  revision = revision.substr(0, 12);
  return started.substr(0, 10) + "-" + (revision.empty() ? "unknown" : revision) + "-" + text_at(report, {"device"}) +
         "-" + text_at(report, {"profile"});
}

std::string qualified_line(const nlohmann::json& report, const std::string& link) {
  return "Qualified toolchain: " + toolchain(report["candidate"]) + " against " + toolchain(report["baseline"]) +
         ", on " + text_at(report, {"device"}) + " (" + text_at(report, {"profile"}) + " profile), passed " +
         text_at(report, {"started"}).substr(0, 10) + " at " + text_at(report, {"revision"}).substr(0, 12) +
         ": [report](" + link + ").";
}

Result<std::string> qualified_line_of(const std::string& readme) {
  const size_t begin = readme.find(kBegin);
  const size_t end = readme.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin + kBegin.size() ||
      readme.find(kBegin, begin + 1) != std::string::npos || readme.find(kEnd, end + 1) != std::string::npos) {
    return Error{"README.md: no single pair of markers " + std::string(kBegin.substr(0, kBegin.size() - 1)) + " ... " +
                 std::string(kEnd)};
  }
  std::string line = readme.substr(begin + kBegin.size(), end - begin - kBegin.size());
  while (!line.empty() && line.back() == '\n') line.pop_back();
  return line;
}

Result<std::string> with_qualified_line(const std::string& readme, const std::string& line) {
  GUFO_RETURN_IF_ERROR(qualified_line_of(readme));
  const size_t from = readme.find(kBegin) + kBegin.size();
  return readme.substr(0, from) + line + "\n" + readme.substr(readme.find(kEnd));
}

Result<PassingReport> newest_passing_report(const fs::path& qualification_dir) {
  std::error_code ec;
  PassingReport newest;
  if (!fs::is_directory(qualification_dir, ec)) return newest;
  for (const fs::directory_entry& entry : fs::directory_iterator(qualification_dir, ec)) {
    const fs::path json_path = entry.path() / "report.json";
    if (!fs::is_regular_file(json_path, ec)) continue;
    auto text = read_text(json_path.string());
    if (!text) return text.error();
    nlohmann::json report = nlohmann::json::parse(*text, nullptr, false);
    if (report.is_discarded()) return Error{json_path.string() + ": not JSON"};
    if (text_at(report, {"verdict"}) != "pass") continue;
    if (newest.path.empty() || text_at(report, {"started"}) > text_at(newest.report, {"started"})) {
      newest = {json_path, std::move(report)};
    }
  }
  if (ec) return Error{qualification_dir.string() + ": cannot list (" + ec.message() + ")"};
  return newest;
}

Result<fs::path> record_report(const nlohmann::json& report, const fs::path& out, const fs::path& source) {
  if (text_at(report, {"verdict"}) != "pass") return Error{"not recorded: the qualification did not pass"};
  const std::string revision = text_at(report, {"revision"});
  if (revision.empty() || revision.ends_with("-dirty")) {
    return Error{"not recorded: the builds are of " + (revision.empty() ? "an unknown revision" : revision) +
                 " (commit first: a recorded report names a commit)"};
  }
  const fs::path readme_path = source / "README.md";
  auto readme = read_text(readme_path.string());
  if (!readme) return readme.error();
  const fs::path name = fs::path("qualification") / record_name(report);
  auto rewritten = with_qualified_line(*readme, qualified_line(report, (name / "report.md").generic_string()));
  if (!rewritten) return rewritten.error();
  std::error_code ec;
  const fs::path dir = source / name;
  if (fs::exists(dir, ec)) return Error{dir.string() + ": already recorded (remove it to record again)"};
  const fs::path partial = dir.string() + ".partial";
  fs::remove_all(partial, ec);
  fs::create_directories(partial, ec);
  if (ec) return Error{partial.string() + ": cannot create (" + ec.message() + ")"};
  for (const fs::directory_entry& entry : fs::directory_iterator(out, ec)) {
    const fs::path& p = entry.path();
    const bool wanted = p.filename() == "report.json" || p.filename() == "report.md" || p.extension() == ".png";
    if (wanted && entry.is_regular_file()) fs::copy_file(p, partial / p.filename(), ec);
    if (ec) return Error{p.string() + ": cannot copy (" + ec.message() + ")"};
  }
  fs::rename(partial, dir, ec);  // the report appears whole or not at all
  if (ec) return Error{dir.string() + ": cannot create (" + ec.message() + ")"};
  GUFO_RETURN_IF_ERROR(write_atomically(readme_path, *rewritten));
  return name;
}

Check readme_line_check(const fs::path& source) {
  Check check{"README's qualified-toolchain line", Verdict::Fail, ""};
  auto newest = newest_passing_report(source / "qualification");
  auto readme = read_text((source / "README.md").string());
  auto line = readme ? qualified_line_of(*readme) : Result<std::string>(readme.error());
  if (!newest || !line) {
    check.detail = (!newest ? newest.error() : line.error()).message;
    return check;
  }
  if (newest->path.empty()) {
    check.detail = "no passing report under qualification/ (gufo qualify --record)";
    return check;
  }
  const fs::path link = fs::relative(newest->path.parent_path(), source) / "report.md";
  const std::string want = qualified_line(newest->report, link.generic_string());
  if (*line != want) {
    check.detail = "README.md says \"" + *line + "\"; the newest passing report (" + link.generic_string() +
                   ") gives \"" + want + "\"";
    return check;
  }
  check.verdict = Verdict::Pass;
  check.detail = "names " + link.generic_string();
  return check;
}

}  // namespace gufo::qualify
