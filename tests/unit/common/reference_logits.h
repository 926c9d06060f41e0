// Test helper: the transformers reference of a tiny model in tests/data/models/NAME/reference
// (the token ids and their float64 logits as .npy), made by tools/hf_reference.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/npy.h"

namespace gufo::testing {

struct ReferenceLogits {
  std::vector<int32_t> tokens;
  NpyMatrix logits;
};

inline ReferenceLogits load_reference_logits(const std::filesystem::path& dir) {
  ReferenceLogits ref;
  std::ifstream in(dir / "reference" / "logits.tokens.json");
  ref.tokens = nlohmann::json::parse(in).at("tokens").get<std::vector<int32_t>>();
  auto logits = read_npy((dir / "reference" / "logits.npy").string());
  EXPECT_TRUE(logits.ok()) << logits.error().message;
  if (logits.ok()) ref.logits = std::move(*logits);
  return ref;
}

}  // namespace gufo::testing
