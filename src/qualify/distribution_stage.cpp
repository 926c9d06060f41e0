// Stage 6: distribution of the candidate, the build being qualified. `cmake --install` into
// work/install (stripped) must give a gufo that runs the shipped model and a
// THIRD_PARTY_NOTICES (scripts/third-party-notices.sh: what the build links and compiles in);
// `cpack` must give a Debian package holding both, whose dependencies (from dpkg-shlibdeps,
// the libraries gufo really loads) each have their notice in the package's own copy; and
// README.md's qualified-toolchain line must be the newest passing report's (record.h).
#include <regex>
#include <set>
#include <sstream>

#include "qualify/record.h"
#include "qualify/stages.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

Check install_check(Context& context, const fs::path& prefix) {
  Check check{"cmake --install", Verdict::Fail, ""};
  std::error_code ec;
  fs::remove_all(prefix, ec);
  // (DESTDIR from the caller's environment would move the installation elsewhere.)
  auto run = context.run("candidate-install",
                         {"cmake", "--install", context.candidate.dir.string(), "--prefix", prefix.string(), "--strip"},
                         600, {{"DESTDIR", ""}});
  if (!run || !run->succeeded()) {
    check.detail = run ? run->why() : run.error().message;
    return check;
  }
  for (const char* file : {"bin/gufo", "share/doc/gufo/THIRD_PARTY_NOTICES", "share/gufo/models/gufo-tiny-q8_0.gguf"}) {
    if (!fs::exists(prefix / file, ec) || fs::file_size(prefix / file, ec) == 0) {
      check.detail = "the installation has no " + std::string(file);
      return check;
    }
  }
  check.verdict = Verdict::Pass;
  check.detail = "gufo, the shipped models and THIRD_PARTY_NOTICES installed";
  return check;
}

Check installed_runs_check(Context& context, const fs::path& prefix) {
  Check check{"the installed gufo runs the installed model", Verdict::Fail, ""};
  std::vector<std::string> argv = {(prefix / "bin/gufo").string(),
                                   "run",
                                   "-m",
                                   (prefix / "share/gufo/models/gufo-tiny-q8_0.gguf").string(),
                                   "-p",
                                   "The GNU General Public License",
                                   "-n",
                                   "8",
                                   "--temp",
                                   "0"};
  for (const std::string& flag : context.device_flags()) argv.push_back(flag);
  auto run = context.run("candidate-installed-run", argv, 300);
  if (run && run->succeeded()) {
    check.verdict = Verdict::Pass;
    check.detail = "8 tokens generated";
  } else {
    check.detail = run ? run->why() : run.error().message;
  }
  return check;
}

// The package names of THIRD_PARTY_NOTICES' section headers, "NAME VERSION (shared library
// ..." or "NAME VERSION (headers in ...".
std::set<std::string> noticed_packages(const std::string& notices) {
  static const std::regex header(R"(^([a-z0-9][a-z0-9.+-]+) \S+ \((shared library|headers in) )");
  std::set<std::string> names;
  std::istringstream lines(notices);
  std::string line;
  std::smatch m;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, m, header)) names.insert(m[1].str());
  }
  return names;
}

// "libc6 (>= 2.34), libfmt9 (>= 9.1.0+ds1) | other" -> the first name of each alternative.
std::vector<std::string> depended_packages(const std::string& depends) {
  std::vector<std::string> names;
  std::istringstream items(depends);
  std::string item;
  while (std::getline(items, item, ',')) {
    std::istringstream words(item);
    std::string name;
    if (words >> name) names.push_back(name);
  }
  return names;
}

Check package_check(Context& context, StageResult& stage) {
  Check check{"Debian package (cpack)", Verdict::Fail, ""};
  const fs::path config = context.candidate.dir / "CPackConfig.cmake";
  const fs::path dir = context.work / "package";
  std::error_code ec;
  if (!fs::exists(config, ec)) {
    check.detail = context.candidate.label() + ": no CPackConfig.cmake (configure it with this revision's CMakeLists)";
    return check;
  }
  fs::remove_all(dir, ec);
  auto run = context.run("candidate-cpack", {"cpack", "--config", config.string(), "-B", dir.string()}, 900);
  if (!run || !run->succeeded()) {
    check.detail = run ? run->why() : run.error().message;
    return check;
  }
  fs::path deb;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".deb") deb = e.path();
  }
  if (deb.empty()) {
    check.detail = "cpack wrote no .deb into " + dir.string();
    return check;
  }
  auto contents = context.run("candidate-deb-contents", {"dpkg-deb", "--contents", deb.string()}, 120);
  auto fields = context.run("candidate-deb-depends", {"dpkg-deb", "--field", deb.string(), "Depends"}, 120);
  const auto listing = contents ? read_text(contents->out.string()) : Result<std::string>(Error{""});
  const auto depends = fields ? read_text(fields->out.string()) : Result<std::string>(Error{""});
  // The package's own copy of the notices, not the installation's.
  const std::string packaged = "./usr/share/doc/gufo/THIRD_PARTY_NOTICES";
  auto extract =
      context.run("candidate-deb-notices",
                  {"/bin/sh", "-c", "dpkg-deb --fsys-tarfile \"$0\" | tar -xO \"$1\"", deb.string(), packaged}, 120);
  const auto notices =
      extract && extract->succeeded() ? read_text(extract->out.string()) : Result<std::string>(Error{""});
  if (!listing || !depends || !notices) {
    check.detail = "cannot read the package or its THIRD_PARTY_NOTICES (dpkg-deb, tar)";
    return check;
  }
  for (const char* file : {"./usr/bin/gufo", "./usr/share/doc/gufo/THIRD_PARTY_NOTICES"}) {
    if (listing->find(file) == std::string::npos) {
      check.detail = deb.filename().string() + " holds no " + file;
      return check;
    }
  }
  const std::set<std::string> noticed = noticed_packages(*notices);
  const std::vector<std::string> needed = depended_packages(*depends);
  for (const std::string& package : needed) {
    if (noticed.count(package) == 0) {
      check.detail = deb.filename().string() + " depends on " + package + ", which THIRD_PARTY_NOTICES does not name";
      return check;
    }
  }
  if (notices->find("(headers in ") == std::string::npos) {
    check.detail = "THIRD_PARTY_NOTICES names no header library (nlohmann-json, CLI11 are compiled in)";
    return check;
  }
  if (needed.empty()) {
    check.detail = deb.filename().string() + " has no Depends (dpkg-shlibdeps found no library)";
    return check;
  }
  check.verdict = Verdict::Pass;
  check.detail = deb.filename().string() + ": " + std::to_string(needed.size()) +
                 " dependencies, each in the notices (" + std::to_string(noticed.size()) + " packages)";
  stage.data["package"] = deb.string();
  stage.data["depends"] = needed;
  return check;
}

}  // namespace

StageResult run_distribution_stage(Context& context) {
  StageResult stage;
  stage.number = 6;
  stage.name = "distribution";
  const fs::path prefix = context.work / "install";
  stage.checks.push_back(install_check(context, prefix));
  if (stage.checks.back().verdict == Verdict::Pass) stage.checks.push_back(installed_runs_check(context, prefix));
  stage.checks.push_back(package_check(context, stage));
  if (context.options.record) {
    // NOTE(record): the line is this report's once it passes; checking it against an older
    // one would keep the first qualification from ever being recorded.
    stage.checks.push_back(
        {"README's qualified-toolchain line", Verdict::Skip, "--record: rewritten from this report"});
  } else {
    stage.checks.push_back(readme_line_check(context.options.source));
  }
  stage.conclude();
  return stage;
}

}  // namespace gufo::qualify
