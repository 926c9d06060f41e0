// The GGUF test corpus, generated: tests/data/bad/ (one malformed file per failure the
// reader must report, with the message substring it must give) and tests/data/good/.
// Regenerate with tools/make_bad_gguf (see main.cpp); gguf_test checks the committed files
// still match what this code generates (tests/unit/gguf/corpus_test.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/result.h"

namespace gufo::corpus {

struct CorpusFile {
  std::string file_name;  // e.g. "bad_magic.gguf"
  std::vector<std::byte> bytes;
  std::string expected_error;  // a substring of the reader's error; empty for good files
};

// The malformed files, each small (< 4 KiB) and wrong in exactly one way.
std::vector<CorpusFile> bad_corpus();
// Valid files written by gguf::Writer.
Result<std::vector<CorpusFile>> good_corpus();

// NOTE(corpus): expected.txt holds one "file<TAB>substring" per line; lines starting
// with '#' are comments. Generated for bad_corpus(); expected_fuzz.txt, kept by hand,
// has the same form for inputs the fuzzer found.
inline constexpr const char* kExpectedFile = "expected.txt";
inline constexpr const char* kExpectedFuzzFile = "expected_fuzz.txt";

}  // namespace gufo::corpus
