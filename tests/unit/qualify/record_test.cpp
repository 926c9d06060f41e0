// Recording a passing qualification in the source tree and README's qualified-toolchain line
// (src/qualify/record.h).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "qualify/record.h"

namespace gufo::qualify {
namespace {

namespace fs = std::filesystem;

nlohmann::json report(const std::string& verdict, const std::string& started) {
  const auto build = [](const std::string& banner) {
    return nlohmann::json{
        {"dir", "build/x"},
        {"diagnose", {{"build", {{"cxx_compiler", {{"banner", banner}}}, {"cuda", {{"enabled", false}}}}}}}};
  };
  return {{"verdict", verdict},
          {"reason", "r"},
          {"profile", "quick"},
          {"device", "cpu"},
          {"revision", "41b3055c3850aa"},
          {"started", started},
          {"baseline", build("g++-12 12.2.0")},
          {"candidate", build("clang 16.0.6")},
          {"stages", nlohmann::json::array()}};
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kReadme =
    "# Gufo\n\ntext\n<!-- qualified-toolchain -->\nnone yet\n<!-- /qualified-toolchain -->\nmore\n";

class QualifyRecord : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("gufo-record-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(root_);
    write(root_ / "source/README.md", kReadme);
  }
  void TearDown() override { fs::remove_all(root_); }
  // A qualification's --out directory, with logs that must not be copied.
  fs::path out_with(const nlohmann::json& r) {
    fs::path out = root_ / "out";
    write(out / "report.json", r.dump(2));
    write(out / "report.md", "# report\n");
    write(out / "numerics.png", "png");
    write(out / "logs/a.out", "log");
    return out;
  }
  // record_report of `r`, its files written to an --out directory first.
  Result<fs::path> record(const nlohmann::json& r, const fs::path& source) {
    return record_report(r, out_with(r), source);
  }
  fs::path root_;
};

TEST(QualifyRecordLine, NamesBothToolchainsTheProfileAndTheReport) {
  const nlohmann::json r = report("pass", "2026-12-06T21:00:00Z");
  EXPECT_EQ(record_name(r), "2026-12-06-41b3055c3850-cpu-quick");
  EXPECT_EQ(qualified_line(r, "qualification/x/report.md"),
            "Qualified toolchain: clang 16.0.6 against g++-12 12.2.0, on cpu (quick profile), passed 2026-12-06 at "
            "41b3055c3850: [report](qualification/x/report.md).");
}

TEST(QualifyRecordLine, ReplacesOnlyTheTextBetweenTheMarkers) {
  auto out = with_qualified_line(kReadme, "new line");
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_EQ(*out, "# Gufo\n\ntext\n<!-- qualified-toolchain -->\nnew line\n<!-- /qualified-toolchain -->\nmore\n");
  EXPECT_EQ(*qualified_line_of(*out), "new line");
}

TEST(QualifyRecordLine, MissingOrRepeatedMarkersAreAnError) {
  EXPECT_FALSE(with_qualified_line("# Gufo\n", "x").ok());
  EXPECT_FALSE(with_qualified_line(kReadme + kReadme, "x").ok());
  EXPECT_FALSE(qualified_line_of("<!-- /qualified-toolchain -->\n<!-- qualified-toolchain -->\n").ok());
}

TEST_F(QualifyRecord, TheNewestPassingReportWins) {
  const fs::path dir = root_ / "source/qualification";
  write(dir / "a/report.json", report("pass", "2026-12-01T00:00:00Z").dump());
  write(dir / "b/report.json", report("pass", "2026-12-03T00:00:00Z").dump());
  write(dir / "c/report.json", report("fail", "2026-12-05T00:00:00Z").dump());
  auto newest = newest_passing_report(dir);
  ASSERT_TRUE(newest.ok()) << newest.error().message;
  EXPECT_EQ(newest->path, dir / "b/report.json");
  EXPECT_TRUE(newest_passing_report(root_ / "nowhere")->path.empty());
  write(dir / "d/report.json", "{not json");
  EXPECT_FALSE(newest_passing_report(dir).ok());
}

TEST_F(QualifyRecord, RecordsTheReportWithoutLogsAndRewritesTheReadme) {
  const fs::path source = root_ / "source";
  EXPECT_EQ(readme_line_check(source).verdict, Verdict::Fail);  // nothing recorded yet
  auto kept = record(report("pass", "2026-12-06T21:00:00Z"), source);
  ASSERT_TRUE(kept.ok()) << kept.error().message;
  const fs::path dir = source / *kept;
  EXPECT_EQ(*kept, fs::path("qualification/2026-12-06-41b3055c3850-cpu-quick"));
  EXPECT_TRUE(fs::exists(dir / "report.json"));
  EXPECT_TRUE(fs::exists(dir / "report.md"));
  EXPECT_TRUE(fs::exists(dir / "numerics.png"));
  EXPECT_FALSE(fs::exists(dir / "logs"));
  EXPECT_NE(read(source / "README.md").find("[report](qualification/2026-12-06-41b3055c3850-cpu-quick/report.md)"),
            std::string::npos);
  const Check check = readme_line_check(source);
  EXPECT_EQ(check.verdict, Verdict::Pass) << check.detail;
}

TEST_F(QualifyRecord, AReadmeLineEditedByHandFailsTheCheck) {
  const fs::path source = root_ / "source";
  ASSERT_TRUE(record(report("pass", "2026-12-06T21:00:00Z"), source).ok());
  write(source / "README.md", *with_qualified_line(read(source / "README.md"), "Qualified toolchain: anything"));
  const Check check = readme_line_check(source);
  EXPECT_EQ(check.verdict, Verdict::Fail);
  EXPECT_NE(check.detail.find("anything"), std::string::npos) << check.detail;
}

TEST_F(QualifyRecord, NothingIsOverwrittenAndAFailIsNotRecorded) {
  const fs::path source = root_ / "source";
  ASSERT_TRUE(record(report("pass", "2026-12-06T21:00:00Z"), source).ok());
  const std::string readme = read(source / "README.md");
  auto again = record(report("pass", "2026-12-06T22:00:00Z"), source);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already recorded"), std::string::npos) << again.error().message;
  EXPECT_EQ(read(source / "README.md"), readme);
  auto failed = record(report("fail", "2026-12-07T00:00:00Z"), source);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("did not pass"), std::string::npos);
  EXPECT_FALSE(fs::exists(source / "qualification/2026-12-07-41b3055c3850-cpu-quick"));
  nlohmann::json dirty = report("pass", "2026-12-08T00:00:00Z");
  dirty["revision"] = "41b3055c3850-dirty";
  auto modified = record(dirty, source);
  ASSERT_FALSE(modified.ok());
  EXPECT_NE(modified.error().message.find("commit first"), std::string::npos) << modified.error().message;
  EXPECT_EQ(read(source / "README.md"), readme);
}

}  // namespace
}  // namespace gufo::qualify
