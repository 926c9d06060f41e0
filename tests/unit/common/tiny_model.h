// Test helper: a tiny model of tests/data/models converted to GGUF by the real binary once
// per test process (the file name carries the pid, so parallel ctest runs don't clash),
// loaded on the CPU backend with its tokenizer.
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

struct TinyModel {
  cpu::CpuBackend cpu{2};
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;

  explicit TinyModel(const std::string& name, const std::string& outtype = "f32") {
    auto loaded = engine::Model::load(convert_tiny_model(name, outtype), cpu);
    EXPECT_TRUE(loaded.ok()) << loaded.error().message;
    if (!loaded.ok()) return;
    model = std::move(loaded).value();
    auto tok = tokenizer::Tokenizer::load(model->file());
    EXPECT_TRUE(tok.ok()) << tok.error().message;
    if (tok.ok()) tokenizer = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  }
};

}  // namespace gufo::testing
