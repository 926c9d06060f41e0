// A small input file (messages, templates, grammars) read whole. NOTE(cli): 256 MiB at most,
// so that a wrong path (a disk image, /dev/zero) cannot eat memory. Errors name the file.
// Tested through tests/unit/template/cli_test.cpp and tests/unit/engine/cli_test.cpp.
#pragma once

#include <string>

#include "core/result.h"

namespace gufo::cli {

Result<std::string> read_file(const std::string& path);

}  // namespace gufo::cli
