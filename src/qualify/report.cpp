#include "qualify/report.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "qualify/json_access.h"

namespace gufo::qualify {

namespace {

namespace fs = std::filesystem;

std::string upper(std::string_view verdict) {
  std::string s(verdict);
  for (char& c : s) c = static_cast<char>(c - ('a' <= c && c <= 'z' ? 'a' - 'A' : 0));
  return s;
}

// Table cells hold no line ends or pipes.
std::string cell(std::string text) {
  for (char& c : text) c = c == '\n' || c == '\r' ? ' ' : c;
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string field(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json& at = member_at(j, path);
  if (at.is_string()) return at.get<std::string>();
  return at.is_null() ? "" : at.dump();
}

void builds_table(std::ostringstream& md, const Report& r) {
  const nlohmann::json& b = r.baseline;
  const nlohmann::json& c = r.candidate;
  const auto row = [&](const char* name, std::initializer_list<const char*> path) {
    md << "| " << name << " | " << cell(field(b, path)) << " | " << cell(field(c, path)) << " |\n";
  };
  md << "| | baseline | candidate |\n|---|---|---|\n";
  row("directory", {"dir"});
  row("preset", {"diagnose", "build", "preset"});
  row("C++ compiler", {"diagnose", "build", "cxx_compiler", "banner"});
  row("flags", {"diagnose", "build", "cxx_flags"});
  row("CUDA", {"diagnose", "build", "cuda", "nvcc_banner"});
  row("CUDA host compiler", {"diagnose", "build", "cuda", "host_compiler_banner"});
  row("CUDA architectures", {"diagnose", "build", "cuda", "architectures"});
  row("CPU", {"diagnose", "cpu", "model"});
  row("fingerprint", {"diagnose", "fingerprint", "hash"});
  md << "\nBoth builds' `gufo diagnose --json` are in report.json.\n\n";
}

}  // namespace

nlohmann::json report_json(const Report& r) {
  nlohmann::json stages = nlohmann::json::array();
  for (const StageResult& s : r.stages) {
    nlohmann::json checks = nlohmann::json::array();
    for (const Check& c : s.checks)
      checks.push_back({{"name", c.name}, {"verdict", to_string(c.verdict)}, {"detail", c.detail}});
    stages.push_back({{"number", s.number},
                      {"name", s.name},
                      {"verdict", to_string(s.verdict)},
                      {"reason", s.reason},
                      {"seconds", s.seconds},
                      {"checks", checks},
                      {"data", s.data},
                      {"plots", s.plots}});
  }
  return {{"verdict", to_string(r.verdict)}, {"reason", r.reason},   {"profile", r.profile}, {"device", r.device},
          {"revision", r.revision},          {"started", r.started}, {"seconds", r.seconds}, {"baseline", r.baseline},
          {"candidate", r.candidate},        {"stages", stages}};
}

std::string report_markdown(const Report& r) {
  std::ostringstream md;
  char took[32];
  std::snprintf(took, sizeof took, "%.0f s", r.seconds);
  md << "# Toolchain qualification: " << upper(to_string(r.verdict)) << "\n\n"
     << "- Revision " << r.revision << ", " << r.profile << " profile, started " << r.started << ", took " << took
     << ".\n- " << r.reason << ".\n\n## Builds\n\n";
  builds_table(md, r);
  md << "## Stages\n\n| # | stage | verdict | reason | seconds |\n|---|---|---|---|---:|\n";
  for (const StageResult& s : r.stages) {
    std::snprintf(took, sizeof took, "%.1f", s.seconds);
    md << "| " << s.number << " | " << s.name << " | " << upper(to_string(s.verdict)) << " | " << cell(s.reason)
       << " | " << took << " |\n";
  }
  for (const StageResult& s : r.stages) {
    md << "\n## " << s.number << ". " << s.name << ": " << upper(to_string(s.verdict)) << "\n\n" << s.reason << ".\n\n";
    if (!s.checks.empty()) {
      md << "| check | verdict | detail |\n|---|---|---|\n";
      for (const Check& c : s.checks) {
        md << "| " << cell(c.name) << " | " << upper(to_string(c.verdict)) << " | " << cell(c.detail) << " |\n";
      }
      md << "\n";
    }
    md << s.markdown;
    for (const std::string& plot : s.plots) md << "![" << s.name << "](" << plot << ")\n\n";
  }
  md << "\nLogs of every program run: logs/ beside this report.\n";
  return md.str();
}

Result<bool> write_atomically(const fs::path& path, const std::string& text) {
  const fs::path temp = path.string() + ".partial";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!(out << text) || !out.flush()) return Error{temp.string() + ": cannot write"};
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) return Error{path.string() + ": cannot write (" + ec.message() + ")"};
  return true;
}

Result<bool> write_report(const Report& report, const fs::path& out) {
  if (auto ok = write_atomically(out / "report.json", report_json(report).dump(2) + "\n"); !ok) return ok;
  return write_atomically(out / "report.md", report_markdown(report));
}

}  // namespace gufo::qualify
