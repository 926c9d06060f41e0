// Test helper: paths under the temporary directory that belong to this test process and are
// removed, with whatever they hold, when it exits. ctest runs every test case in a process of
// its own, so files named by pid and left behind filled /tmp by the hundred.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace gufo::testing {

// temp_directory_path() / (stem + "_" + pid + suffix), deleted at process exit.
inline std::filesystem::path process_temp_path(const std::string& stem, const std::string& suffix = "") {
  struct Registry {
    std::mutex mutex;
    std::vector<std::filesystem::path> paths;
    ~Registry() {
      for (const std::filesystem::path& path : paths) {
        std::error_code ignored;
        std::filesystem::remove_all(path, ignored);
      }
    }
  };
  static Registry registry;
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + suffix);
  const std::lock_guard lock(registry.mutex);
  registry.paths.push_back(path);
  return path;
}

}  // namespace gufo::testing
