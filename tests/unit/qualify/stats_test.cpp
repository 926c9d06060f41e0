// The noise-aware comparison behind stage 5 (src/qualify/stats.h).
#include <gtest/gtest.h>

#include "qualify/stats.h"

namespace gufo::qualify {
namespace {

TEST(QualifyStats, StudentQuantilesComeFromTheTable) {
  EXPECT_DOUBLE_EQ(student_t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_975(4), 2.776);
  EXPECT_DOUBLE_EQ(student_t_975(4.9), 2.776);  // the smaller degree of freedom: wider
  EXPECT_DOUBLE_EQ(student_t_975(30), 2.042);
  EXPECT_DOUBLE_EQ(student_t_975(1e9), 1.960);
}

TEST(QualifyStats, SummaryIsTheSampleMeanAndDeviation) {
  const Summary s = summarize({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_NEAR(s.stdev, 2.138, 1e-3);  // n - 1 in the denominator
  EXPECT_EQ(s.n, 8u);
}

TEST(QualifyStats, OverlappingSamplesAreNoChange) {
  auto c = compare_throughput({100, 104, 96, 101}, {99, 103, 97, 102});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->change, Change::None);
  EXPECT_LT(c->relative_low, 0);
  EXPECT_GT(c->relative_high, 0);
  EXPECT_EQ(c->describe().rfind("no change", 0), 0u) << c->describe();
}

TEST(QualifyStats, ASlowerCandidateIsSlowerByItsRelativeDifference) {
  auto c = compare_throughput({100, 101, 99, 100}, {80, 81, 79, 80});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->change, Change::Slower);
  EXPECT_NEAR(c->relative, -0.20, 1e-9);
  EXPECT_LT(c->relative_high, -0.15);
  EXPECT_EQ(c->describe().rfind("slower by 20.0%", 0), 0u) << c->describe();
}

TEST(QualifyStats, AFasterCandidateIsFaster) {
  auto c = compare_throughput({100, 101, 99}, {110, 111, 109});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->change, Change::Faster);
  EXPECT_GT(c->relative_low, 0);
}

TEST(QualifyStats, ConstantSamplesCompareExactly) {
  auto same = compare_throughput({50, 50}, {50, 50});
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->change, Change::None);
  auto slower = compare_throughput({50, 50}, {49, 49});
  ASSERT_TRUE(slower.ok());
  EXPECT_EQ(slower->change, Change::Slower);
}

TEST(QualifyStats, TooFewSamplesIsAnError) {
  auto c = compare_throughput({100}, {100, 101});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("at least two samples"), std::string::npos);
  EXPECT_FALSE(compare_throughput({0, 0}, {1, 1}).ok());
}

}  // namespace
}  // namespace gufo::qualify
