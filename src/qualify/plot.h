// Bar charts for the report, drawn by gnuplot (Debian's gnuplot-nox) into PNG files beside
// report.md. A missing gnuplot costs the pictures, never the verdicts.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace gufo::qualify {

struct Plot {
  std::string file;  // "numerics.png", written to the report's directory
  std::string title;
  std::string y_label;
  bool log_y = false;
  bool error_bars = false;  // the data's value columns come in pairs: value, error
};

// `table`: a header line of column names, then one row per cluster: a label (no spaces) and
// the values of each series. Returns the file name when gnuplot drew it.
std::optional<std::string> draw_bars(const std::filesystem::path& out_dir, const std::filesystem::path& work_dir,
                                     const Plot& plot, const std::string& table);

}  // namespace gufo::qualify
