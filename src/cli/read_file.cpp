// read_file (see read_file.h).
#include "cli/read_file.h"

#include <fstream>

namespace gufo::cli {

Result<std::string> read_file(const std::string& path) {
  constexpr std::streamoff kMaxInputBytes = std::streamoff{256} << 20;
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open the file"};
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) return Error{path + ": cannot read the file"};
  if (size > kMaxInputBytes) return Error{path + ": file larger than 256 MiB"};
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<size_t>(size), '\0');
  if (size > 0 && !in.read(text.data(), size)) return Error{path + ": cannot read the file"};
  return text;
}

}  // namespace gufo::cli
