// Test helpers: a GGUF model loaded on the CPU backend with its tokenizer (LoadedModel: the
// shipped models/), and a tiny model of tests/data/models converted to GGUF by the real binary
// once per test process (the file name carries the pid, so parallel ctest runs don't clash)
// and loaded so (TinyModel).
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "engine/model.h"
#include "tests/unit/common/temp_path.h"
#include "tokenizer/tokenizer.h"

namespace gufo::testing {

inline std::string convert_tiny_model(const std::string& name, const std::string& outtype) {
  namespace fs = std::filesystem;
  const fs::path gguf = process_temp_path("gufo_tiny_" + name + "_" + outtype, ".gguf");
  if (!fs::exists(gguf)) {
    const fs::path dir = fs::path(GUFO_TEST_DATA_DIR) / "models" / name;
    const std::string command = std::string(GUFO_BINARY) + " convert '" + dir.string() + "' -o '" + gguf.string() +
                                "' --outtype " + outtype + " 2>/dev/null";
    EXPECT_EQ(std::system(command.c_str()), 0) << command;
  }
  return gguf.string();
}

// `model` (and `tokenizer`) null when loading failed, which is a test failure naming the file.
struct LoadedModel {
  cpu::CpuBackend cpu{2};
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;

  explicit LoadedModel(const std::string& path) {
    auto loaded = engine::Model::load(path, cpu);
    EXPECT_TRUE(loaded.ok()) << path << ": " << loaded.error().message;
    if (!loaded.ok()) return;
    model = std::move(loaded).value();
    auto tok = tokenizer::Tokenizer::load(model->file());
    EXPECT_TRUE(tok.ok()) << path << ": " << tok.error().message;
    if (tok.ok()) tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  }
};

struct TinyModel : LoadedModel {
  explicit TinyModel(const std::string& name, const std::string& outtype = "f32")
      : LoadedModel(convert_tiny_model(name, outtype)) {}
};

}  // namespace gufo::testing
