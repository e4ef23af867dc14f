// report.html: a self-contained page (no scripts, no external files) with inline SVG line charts
// (per-step loss, accuracy, learning rate and throughput, with epoch ends and resume points marked),
// the model summary, the environment and config tables, and the final confusion matrix. Output is
// deterministic for given data (golden-string testable).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace ember::io {

struct Series {
  std::string name;
  std::vector<double> x, y;  // same length; non-finite points are skipped when drawn
  // Points are drawn as dots too when the series has at most this many (a lone point is always
  // a dot); denser series are plain lines.
  size_t dots_up_to = 40;
};

// A vertical line across a chart at x: an epoch end (light, labelled only in its tooltip) or an
// event such as a resume (strong: dashed orange, labelled at the top).
struct Marker {
  double x = 0;
  std::string label;
  bool strong = false;
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  std::vector<Marker> markers;  // drawn only inside the x range of the data
};

struct ReportData {
  std::string title;
  std::vector<std::pair<std::string, std::string>> summary;      // final accuracy, wall time, ...
  std::vector<std::pair<std::string, std::string>> environment;  // version, device, CPU, threads, ...
  std::vector<std::pair<std::string, std::string>> config;       // resolved flags
  std::vector<std::pair<std::string, std::string>> preformatted; // (heading, text) in <pre>: the model
  std::vector<Chart> charts;
  std::vector<std::string> table_header;             // the epoch table
  std::vector<std::vector<std::string>> table_rows;
  std::vector<std::string> class_names;              // confusion matrix labels
  std::vector<std::vector<int64_t>> confusion;       // [true][predicted]; empty: no matrix
};

// One chart as an <svg> element (width x height px). Empty or all-NaN data draws "no data".
std::string svg_line_chart(const Chart& chart, int width = 520, int height = 300);
// The confusion matrix as an HTML table, cells shaded by row-normalised count.
std::string html_confusion_matrix(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m);
std::string html_escape(const std::string& s);
std::string render_report_html(const ReportData& data);
// render_report_html + write_file_atomic.
void write_report(const std::filesystem::path& path, const ReportData& data);

}  // namespace ember::io
