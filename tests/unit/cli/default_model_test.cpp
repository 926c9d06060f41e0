// The default model's search order (src/cli/default_model.h): $GUFO_MODEL wins and must exist,
// then $GUFO_MODELS_DIR, then the fixed folders; the error names every place it looked.
// `gufo run` etc. without -m are tested end to end by tests/models.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/default_model.h"

namespace {

namespace fs = std::filesystem;
using gufo::cli::find_default_model;
using gufo::cli::kDefaultModelFile;
using gufo::cli::ModelSearch;

class DefaultModel : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gufo_default_model_" + std::to_string(::getpid()));
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    fs::create_directories(root_ / "env");
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string touch(const fs::path& dir) {
    const fs::path file = dir / kDefaultModelFile;
    std::ofstream(file) << "GGUF";
    return file.string();
  }
  fs::path root_;
};

TEST_F(DefaultModel, FirstFolderHoldingTheModelWins) {
  ModelSearch search;
  search.dirs = {(root_ / "a").string(), (root_ / "b").string()};
  const std::string in_b = touch(root_ / "b");
  auto found = find_default_model(search);
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(*found, in_b);
  const std::string in_a = touch(root_ / "a");
  EXPECT_EQ(*find_default_model(search), in_a);
}

TEST_F(DefaultModel, ModelsDirComesBeforeTheFixedFolders) {
  ModelSearch search;
  search.dirs = {(root_ / "a").string()};
  touch(root_ / "a");
  search.gufo_models_dir = (root_ / "env").string();
  const std::string in_env = touch(root_ / "env");
  EXPECT_EQ(*find_default_model(search), in_env);
}

TEST_F(DefaultModel, GufoModelIsUsedAsItIs) {
  ModelSearch search;
  search.dirs = {(root_ / "a").string()};
  touch(root_ / "a");
  const fs::path other = root_ / "other.gguf";
  std::ofstream(other) << "GGUF";
  search.gufo_model = other.string();
  EXPECT_EQ(*find_default_model(search), other.string());
}

TEST_F(DefaultModel, MissingGufoModelIsAnError) {
  ModelSearch search;
  search.dirs = {(root_ / "a").string()};
  touch(root_ / "a");  // not used: the user named another file
  search.gufo_model = (root_ / "missing.gguf").string();
  auto found = find_default_model(search);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.error().message, "GUFO_MODEL=" + (root_ / "missing.gguf").string() + ": no such model file");
}

TEST_F(DefaultModel, NotFoundNamesEveryPlace) {
  ModelSearch search;
  search.dirs = {(root_ / "a").string(), (root_ / "b").string()};
  auto found = find_default_model(search);
  ASSERT_FALSE(found.ok());
  const std::string& message = found.error().message;
  EXPECT_NE(message.find("no model given (-m)"), std::string::npos) << message;
  EXPECT_NE(message.find("$GUFO_MODEL (unset)"), std::string::npos) << message;
  EXPECT_NE(message.find("$GUFO_MODELS_DIR (unset)"), std::string::npos) << message;
  EXPECT_NE(message.find((root_ / "a" / kDefaultModelFile).string()), std::string::npos) << message;
  EXPECT_NE(message.find((root_ / "b" / kDefaultModelFile).string()), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

TEST_F(DefaultModel, ProcessSearchEndsWithTheSourceTree) {
  const ModelSearch search = gufo::cli::default_model_search();
  ASSERT_FALSE(search.dirs.empty());
  EXPECT_EQ(fs::path(search.dirs.back()).filename(), "models");
}

}  // namespace
