// Every file of the malformed corpus (tests/data/bad) must fail to load with an error that
// names the file and contains the expected substring (bad/expected*.txt), through both
// entry points: File::open (mmap) and File::parse (bytes in memory).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gguf/file.h"
#include "test_util.h"

namespace gufo::gguf {
namespace {

using testing::bad_expectations;
using testing::data_dir;

TEST(GgufBadCorpus, EveryFileFailsWithItsExpectedMessage) {
  const auto expected = bad_expectations();
  ASSERT_GE(expected.size(), 25u);
  for (const auto& [name, substring] : expected) {
    SCOPED_TRACE(name);
    const std::filesystem::path path = data_dir() / "bad" / name;
    ASSERT_TRUE(std::filesystem::exists(path));
    auto opened = File::open(path.string());
    ASSERT_FALSE(opened.ok());
    const std::string& message = opened.error().message;
    EXPECT_NE(message.find(substring), std::string::npos) << message;
    EXPECT_EQ(message.rfind(path.string() + ": ", 0), 0u) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;

    const auto bytes = testing::read_bytes(path);
    auto parsed = File::parse(bytes, name);
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, name + ": " + message.substr(path.string().size() + 2));
  }
}

TEST(GgufBadCorpus, EveryFileHasAnExpectationAndIsSmall) {
  const auto expected = bad_expectations();
  for (const auto& entry : std::filesystem::directory_iterator(data_dir() / "bad")) {
    if (entry.path().extension() != ".gguf") continue;
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(expected.count(name)) << name << " has no line in expected.txt";
    EXPECT_LT(entry.file_size(), 4096u) << name;
  }
}

}  // namespace
}  // namespace gufo::gguf
