#include "qualify/plot.h"

#include <fstream>
#include <sstream>

#include "qualify/process.h"

namespace gufo::qualify {

namespace fs = std::filesystem;

namespace {

// A gnuplot string literal: single quotes, a quote inside doubled.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::optional<std::string> draw_bars(const fs::path& out_dir, const fs::path& work_dir, const Plot& plot,
                                     const std::string& table) {
  const std::string stem = fs::path(plot.file).stem().string();
  const fs::path data = work_dir / (stem + ".dat");
  const fs::path script = work_dir / (stem + ".gnuplot");
  // The header names the series; gnuplot gets the rows only.
  const size_t header_end = table.find('\n');
  std::ofstream(data) << (header_end == std::string::npos ? std::string() : table.substr(header_end + 1));
  std::istringstream header(table.substr(0, table.find('\n')));
  std::vector<std::string> columns;
  for (std::string c; header >> c;) columns.push_back(c);
  const size_t step = plot.error_bars ? 2 : 1;
  const fs::path png = out_dir / plot.file;
  const fs::path partial = png.string() + ".partial";
  std::ostringstream gp;
  gp << "set terminal pngcairo size 900,500 noenhanced\n"
     << "set output " << quoted(partial.string()) << "\n"
     << "set title '" << plot.title << "'\nset ylabel '" << plot.y_label << "'\n"
     << "set style data histograms\nset style fill solid 0.8 border -1\nset key below\n"
     << "set xtics rotate by -20\nset grid ytics\n";
  gp << (plot.error_bars ? "set style histogram errorbars gap 1 lw 1\n" : "set style histogram clustered gap 1\n");
  if (plot.log_y) gp << "set logscale y\n";
  gp << "set yrange [" << (plot.log_y ? "*" : "0") << ":*]\nplot ";
  for (size_t c = 1, series = 0; c < columns.size(); c += step, ++series) {
    if (series > 0) gp << ", ";
    gp << quoted(data.string()) << " using " << c + 1;
    if (plot.error_bars) gp << ":" << c + 2;
    gp << (series == 0 ? ":xtic(1)" : "") << " title " << quoted(columns[c]);
  }
  gp << '\n';
  std::ofstream(script) << gp.str();
  ProcessSpec spec;
  spec.argv = {"gnuplot", script.string()};
  spec.stdout_path = (work_dir / (stem + ".gnuplot.log")).string();
  spec.timeout_s = 60;
  auto run = run_process(spec);
  std::error_code ec;
  if (!run || !run->succeeded()) {
    fs::remove(partial, ec);
    return std::nullopt;
  }
  fs::rename(partial, png, ec);  // a half-drawn picture never stands under the final name
  if (ec) return std::nullopt;
  return plot.file;
}

}  // namespace gufo::qualify
