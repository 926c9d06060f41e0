// Quality metrics by hand (NLL, perplexity, KL, top-1, limits) and `gufo quality` end to end
// on tiny-qwen3 against its transformers reference logits.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "engine/quality.h"

namespace gufo::engine {
namespace {

namespace fs = std::filesystem;

TEST(Quality, NllAndPerplexityByHand) {
  // Two positions scored over a 2-token vocabulary: p(next) = 1/2 and e/(1+e).
  const std::vector<int32_t> tokens = {0, 1, 0, 1};
  const std::vector<float> logits = {0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0.0f, 9.0f, 9.0f};
  auto r = measure_quality(tokens, logits, 2, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const double e = std::exp(1.0);
  EXPECT_NEAR(r->nll[0], std::log(2.0), 1e-9);
  EXPECT_NEAR(r->nll[1], -std::log(e / (1 + e)), 1e-6);
  EXPECT_NEAR(r->nll[2], std::log(2.0), 1e-9);
  EXPECT_NEAR(r->perplexity, std::exp((2 * std::log(2.0) - std::log(e / (1 + e))) / 3), 1e-6);
  EXPECT_FALSE(r->has_reference);
}

TEST(Quality, KlAndTop1AgainstAReference) {
  const std::vector<int32_t> tokens = {0, 1};
  const std::vector<float> logits = {0.0f, 0.0f, 2.0f, 0.0f};
  const NpyMatrix same{2, 2, logits};
  auto r = measure_quality(tokens, logits, 2, &same);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_kl, 0.0);
  EXPECT_EQ(r->top1_agreement, 1.0);
  const NpyMatrix other{2, 2, {0.0f, 0.0f, 0.0f, 2.0f}};
  r = measure_quality(tokens, logits, 2, &other);
  ASSERT_TRUE(r.ok());
  // Row 1: reference (p, q) against model (q, p), with p = 1 / (1 + e²).
  const double p = 1 / (1 + std::exp(2.0)), q = 1 - p;
  EXPECT_NEAR(r->max_kl, p * std::log(p / q) + q * std::log(q / p), 1e-6);
  EXPECT_EQ(r->top1_agreement, 0.5);
  QualityLimits limits;
  limits.min_top1 = 0.9;
  EXPECT_NE(check_limits(*r, limits).value_or("").find("top-1"), std::string::npos);
  limits = QualityLimits{};
  limits.max_kl = 10.0;
  EXPECT_FALSE(check_limits(*r, limits).has_value());
  // NaN passes every comparison; a miscompiled kernel's NaN must not pass the limits.
  r->mean_kl = std::nan("");
  EXPECT_NE(check_limits(*r, limits).value_or("").find("NaN"), std::string::npos);
}

TEST(Quality, LimitsPerModelFile) {
  const fs::path path = fs::temp_directory_path() / ("gufo_limits_" + std::to_string(::getpid()) + ".json");
  std::ofstream(path) << R"({"note": "how they were set",
    "a-q8_0.gguf": {"max_mean_kl": 0.001, "min_top1": 0.97, "note": "measured 4e-4"},
    "a-q4_k_m.gguf": {"max_mean_kl": 0.05}})";
  auto q8 = read_limits(path.string(), "/some/dir/a-q8_0.gguf");
  ASSERT_TRUE(q8.ok()) << q8.error().message;
  EXPECT_EQ(q8->max_mean_kl, 0.001);
  EXPECT_EQ(q8->min_top1, 0.97);
  EXPECT_FALSE(q8->max_p99_kl.has_value());
  auto q4 = read_limits(path.string(), "a-q4_k_m.gguf");
  ASSERT_TRUE(q4.ok());
  EXPECT_EQ(q4->max_mean_kl, 0.05);
  auto missing = read_limits(path.string(), "b.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, path.string() + ": no limits for model file 'b.gguf'");
  std::ofstream(path) << R"({"a.gguf": {"max_mean_kl": "small"}})";
  auto bad = read_limits(path.string(), "a.gguf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, path.string() + ": a.gguf: max_mean_kl: expected a number");
  fs::remove(path);
}

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

CliRun gufo(const std::string& args) {
  const fs::path err = fs::temp_directory_path() / ("gufo_quality_err_" + std::to_string(::getpid()) + ".txt");
  const std::string command = std::string(GUFO_BINARY) + " " + args + " 2>" + err.string();
  CliRun run{};
  FILE* pipe = popen(command.c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) run.out.append(buf.data(), n);
  run.code = WEXITSTATUS(pclose(pipe));
  std::ifstream in(err);
  run.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return run;
}

TEST(QualityCli, AgainstTransformersAndAgainstItself) {
  const fs::path dir = fs::path(GUFO_TEST_DATA_DIR) / "models" / "tiny-qwen3";
  const fs::path tmp = fs::temp_directory_path() / ("gufo_quality_cli_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  std::ifstream in(dir / "reference" / "logits.tokens.json");
  const std::string text = nlohmann::json::parse(in).at("text").get<std::string>();
  std::ofstream(tmp / "text.txt", std::ios::binary) << text;
  const std::string model = (tmp / "q8.gguf").string();
  ASSERT_EQ(gufo("convert '" + dir.string() + "' -o '" + model + "' --outtype q8_0").code, 0);

  const std::string ref = (dir / "reference" / "logits.npy").string();
  std::ofstream(tmp / "loose.json") << R"({"max_mean_kl": 0.012, "max_kl": 0.05, "min_top1": 0.85})";
  CliRun loose = gufo("quality -m " + model + " --text " + (tmp / "text.txt").string() + " --reference " + ref +
                      " --limits " + (tmp / "loose.json").string() + " --json");
  ASSERT_EQ(loose.code, 0) << loose.err;
  EXPECT_NE(loose.err.find("limits: ok"), std::string::npos) << loose.err;  // said, not silent
  const nlohmann::json report = nlohmann::json::parse(loose.out);
  EXPECT_GT(report["kl"]["mean"].get<double>(), 0.0);
  EXPECT_GE(report["top1_agreement"].get<double>(), 0.85);

  std::ofstream(tmp / "strict.json") << R"({"max_mean_kl": 1e-9})";
  CliRun strict = gufo("quality -m " + model + " --text " + (tmp / "text.txt").string() + " --reference " + ref +
                       " --limits " + (tmp / "strict.json").string());
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.err.find("mean KL"), std::string::npos) << strict.err;
  EXPECT_EQ(strict.err.find("limits: ok"), std::string::npos) << strict.err;

  // A build against its own saved logits: KL 0, top-1 1.
  const std::string saved = (tmp / "self.npy").string();
  ASSERT_EQ(gufo("quality -m " + model + " --text " + (tmp / "text.txt").string() + " --save-logits " + saved).code, 0);
  CliRun self =
      gufo("quality -m " + model + " --text " + (tmp / "text.txt").string() + " --reference " + saved + " --json");
  ASSERT_EQ(self.code, 0) << self.err;
  EXPECT_EQ(nlohmann::json::parse(self.out)["kl"]["max"].get<double>(), 0.0);

  // Another text than the reference was made from: refused, one line.
  std::ofstream(tmp / "other.txt") << "something else entirely";
  CliRun other = gufo("quality -m " + model + " --text " + (tmp / "other.txt").string() + " --reference " + ref);
  EXPECT_EQ(other.code, 1);
  EXPECT_NE(other.err.find("other tokens"), std::string::npos) << other.err;
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace gufo::engine
