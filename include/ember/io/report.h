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
  // Above kFullConfusionMaxClasses: the file next to the report with the whole matrix (the report
  // shows html_confusion_summary); write_report writes it (confusion_csv).
  std::string confusion_csv_name = "confusion.csv";
};

// ---- big confusion matrices ------------------------------------------------------------------------
// Above this many classes a full matrix is no longer read (2,000 classes: a 200 MB report.html, 86 s
// to render; 24 MB of `ember eval`): the report and `ember eval` show the most-confused pairs and
// the classes of lowest accuracy instead, and the whole matrix goes to a CSV file.
inline constexpr size_t kFullConfusionMaxClasses = 50;
// How many pairs and classes such a summary lists.
inline constexpr size_t kConfusionSummaryRows = 20;

struct ConfusedPair {
  size_t true_class = 0, predicted = 0;
  int64_t count = 0;
  double share = 0;  // of the true class's samples
};
// The off-diagonal cells of `m` ([true][predicted]) with the most samples, at most `n`, largest
// first (ties: lower true class, then lower predicted class); zero cells are left out.
std::vector<ConfusedPair> most_confused_pairs(const std::vector<std::vector<int64_t>>& m, size_t n);
struct ClassAccuracy {
  size_t cls = 0;
  int64_t correct = 0, total = 0;
  double accuracy() const { return total ? double(correct) / double(total) : 0.0; }
};
// The `n` classes of lowest accuracy (classes without samples left out), lowest first.
std::vector<ClassAccuracy> worst_classes(const std::vector<std::vector<int64_t>>& m, size_t n);
// The matrix as CSV: a header "true \ predicted,<class names...>", then one row per true class.
// Names are quoted where CSV needs it.
std::string confusion_csv(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m);
// The summary as HTML (two tables), for matrices above kFullConfusionMaxClasses; `csv_name` is the
// file that holds the whole matrix, named in a line above the tables.
std::string html_confusion_summary(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m,
                                   const std::string& csv_name);

// One chart as an <svg> element (width x height px). Empty or all-NaN data draws "no data".
std::string svg_line_chart(const Chart& chart, int width = 520, int height = 300);
// The confusion matrix as an HTML table, cells shaded by row-normalised count.
std::string html_confusion_matrix(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m);
std::string html_escape(const std::string& s);
std::string render_report_html(const ReportData& data);
// render_report_html + write_file_atomic; above kFullConfusionMaxClasses classes also the whole
// matrix as confusion_csv_name in the same directory.
void write_report(const std::filesystem::path& path, const ReportData& data);

}  // namespace ember::io
