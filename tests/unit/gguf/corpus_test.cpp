// The committed corpus (tests/data/bad, tests/data/good) must be exactly what
// tools/make_bad_gguf generates, so the files and their generator never drift apart.
#include "corpus.h"

#include <gtest/gtest.h>

#include <string>

#include "test_util.h"

namespace gufo::corpus {
namespace {

using gguf::testing::data_dir;
using gguf::testing::read_bytes;

TEST(GgufCorpus, CommittedBadFilesMatchTheGenerator) {
  const auto expected = gguf::testing::bad_expectations();
  for (const CorpusFile& file : bad_corpus()) {
    SCOPED_TRACE(file.file_name);
    EXPECT_EQ(read_bytes(data_dir() / "bad" / file.file_name), file.bytes)
        << "regenerate with: make_bad_gguf tests/data";
    ASSERT_TRUE(expected.count(file.file_name));
    EXPECT_EQ(expected.at(file.file_name), file.expected_error);
  }
}

TEST(GgufCorpus, CommittedGoodFilesMatchTheGenerator) {
  auto good = good_corpus();
  ASSERT_TRUE(good.ok()) << good.error().message;
  for (const CorpusFile& file : *good) {
    EXPECT_EQ(read_bytes(data_dir() / "good" / file.file_name), file.bytes)
        << file.file_name << ": regenerate with: make_bad_gguf tests/data";
  }
}

}  // namespace
}  // namespace gufo::corpus
