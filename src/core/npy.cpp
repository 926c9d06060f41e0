// .npy read/write (see npy.h). The header is a Python dict literal; only the three keys
// NumPy writes are accepted, and the data length must match the shape exactly.
#include "core/npy.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <regex>

namespace gufo {

Result<NpyMatrix> read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open"};
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) return Error{path + ": not a .npy file"};
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len = 0;
  size_t header_start = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<size_t>(static_cast<uint8_t>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return Error{path + ": truncated header"};
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    header_start = 12;
  } else {
    return Error{path + ": unsupported .npy version " + std::to_string(major)};
  }
  if (header_len > bytes.size() - header_start) return Error{path + ": truncated header"};
  const std::string header = bytes.substr(header_start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr':\s*'([^']*)')")) || m[1] != "<f4") {
    return Error{path + ": expected float32 little-endian data ('<f4')"};
  }
  if (!std::regex_search(header, m, std::regex(R"('fortran_order':\s*(True|False))")) || m[1] != "False") {
    return Error{path + ": expected C order (fortran_order False)"};
  }
  if (!std::regex_search(header, m, std::regex(R"('shape':\s*\(\s*(\d{1,12})\s*,\s*(\d{1,12})\s*,?\s*\))"))) {
    return Error{path + ": expected a 2-D shape"};
  }
  NpyMatrix matrix;
  matrix.rows = std::stoll(m[1]);
  matrix.cols = std::stoll(m[2]);
  const size_t data_start = header_start + header_len;
  const uint64_t want = static_cast<uint64_t>(matrix.rows) * static_cast<uint64_t>(matrix.cols) * 4;
  if (bytes.size() - data_start != want) {
    return Error{path + ": data is " + std::to_string(bytes.size() - data_start) + " bytes, shape needs " +
                 std::to_string(want)};
  }
  matrix.data.resize(static_cast<size_t>(matrix.rows * matrix.cols));
  std::memcpy(matrix.data.data(), bytes.data() + data_start, want);
  return matrix;
}

Status write_npy(const std::string& path, const NpyMatrix& matrix) {
  if (matrix.rows < 0 || matrix.cols < 0 || matrix.data.size() != static_cast<size_t>(matrix.rows * matrix.cols)) {
    return Error{path + ": matrix data does not match its shape"};
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(matrix.rows) + ", " +
                       std::to_string(matrix.cols) + "), }";
  // NOTE(npy): magic + version + length + header + '\n' is padded to a multiple of 64.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header.push_back('\n');
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Error{path + ": cannot write"};
    out.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size() & 0xff), static_cast<char>(header.size() >> 8)};
    out.write(len, 2);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    out.write(reinterpret_cast<const char*>(matrix.data.data()),
              static_cast<std::streamsize>(matrix.data.size() * sizeof(float)));
    if (!out) {
      std::remove(tmp.c_str());
      return Error{path + ": write failed"};
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Error{path + ": cannot rename the finished file into place"};
  }
  return {};
}

}  // namespace gufo
