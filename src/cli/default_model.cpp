// The default model's search (see default_model.h).
#include "cli/default_model.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace gufo::cli {

namespace {

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

bool is_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

ModelSearch default_model_search() {
  ModelSearch search;
  search.gufo_model = env("GUFO_MODEL");
  search.gufo_models_dir = env("GUFO_MODELS_DIR");
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) search.dirs.push_back((exe.parent_path().parent_path() / "share" / "gufo" / "models").string());
  search.dirs.emplace_back(GUFO_SOURCE_MODELS_DIR);  // the source tree's models/ (CMake)
  return search;
}

Result<std::string> find_default_model(const ModelSearch& search) {
  if (search.gufo_model) {
    if (is_file(*search.gufo_model)) return *search.gufo_model;
    return Error{"GUFO_MODEL=" + *search.gufo_model + ": no such model file"};
  }
  std::string tried = "$GUFO_MODEL (unset), ";
  std::vector<std::string> dirs;
  if (search.gufo_models_dir) {
    dirs.push_back(*search.gufo_models_dir);
  } else {
    tried += "$GUFO_MODELS_DIR (unset), ";
  }
  dirs.insert(dirs.end(), search.dirs.begin(), search.dirs.end());
  for (size_t i = 0; i < dirs.size(); ++i) {
    const std::filesystem::path candidate = std::filesystem::path(dirs[i]) / kDefaultModelFile;
    if (is_file(candidate)) return candidate.string();
    tried += candidate.string() + (i + 1 < dirs.size() ? ", " : "");
  }
  return Error{"no model given (-m) and no default model found; looked at " + tried};
}

Result<std::string> model_or_default(const std::string& path) {
  if (!path.empty()) return path;
  return find_default_model(default_model_search());
}

}  // namespace gufo::cli
