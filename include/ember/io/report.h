// report.html: a self-contained page (no scripts, no external files) with inline SVG line charts of
// loss and accuracy per epoch and of throughput, the environment and config tables, and the final
// confusion matrix. Output is deterministic for given data (golden-string testable).
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
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
};

struct ReportData {
  std::string title;
  std::vector<std::pair<std::string, std::string>> summary;      // final accuracy, wall time, ...
  std::vector<std::pair<std::string, std::string>> environment;  // version, device, CPU, threads, ...
  std::vector<std::pair<std::string, std::string>> config;       // resolved flags
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
