// The HTML run report with hand-written SVG charts: no JavaScript, no dependencies, and the same
// bytes for the same data, so tests compare strings and the file opens anywhere, offline.
#include "ember/io/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/core/error.h"
#include "ember/io/atomic_file.h"

namespace ember::io {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

namespace {
const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

// Axis ticks at 1/2/5 x 10^k steps.
double nice_step(double range, int target) {
  if (!(range > 0)) return 1.0;
  double raw = range / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  double n = raw / mag;
  return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * mag;
}
std::string num(double v) { return fmt::format("{:.4g}", v); }

// An axis tick: 4 significant digits, but a whole 10,000 or more written out with thousands
// separators (a step axis read "1e+04", issue 48); scientific only beyond 1e15 and below 1e-3.
std::string tick_label(double v) {
  const double a = std::abs(v);
  if (a < 1e4 || a >= 1e15 || v != std::floor(v)) return num(v);
  const auto whole = static_cast<long long>(a);
  std::string digits = std::to_string(whole), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

// Values a chart can place: finite and below 1e300, so that differences of two of them stay finite.
bool plottable(double v) { return std::isfinite(v) && std::abs(v) < 1e300; }

// An axis range wide enough to divide at its magnitude. A flat or nearly flat series (a learning
// rate of 1e39 held constant) gets a band of +-0.5 near 0 and +-5% of its value beyond: at 1e39,
// adding 0.5 or a tick step of 1e-16 of the value changes nothing, and a tick loop that adds such a
// step never ends (issue 22: a diverged run's report.html grew until the host ran out of memory).
void widen(double& lo, double& hi) {
  const double magnitude = std::max(std::abs(lo), std::abs(hi));
  if (hi - lo > magnitude * 1e-9) return;
  const double pad = std::max(0.5, magnitude * 0.05);
  const double mid = lo / 2 + hi / 2;
  lo = mid - pad, hi = mid + pad;
}

// The ticks first, first + step, ... up to last. A chart has about 5 of them on each axis; the
// bound only stops a degenerate range from turning into an endless list.
std::vector<double> ticks(double first, double last, double step) {
  constexpr double kMaxTicks = 100;
  const double n = std::floor((last - first) / step + 1e-9);
  EMBER_ASSERT(std::isfinite(n) && n >= 0 && n <= kMaxTicks, "chart ticks from ", first, " to ", last, " every ", step);
  std::vector<double> out;
  for (int64_t i = 0; i <= int64_t(n); ++i) out.push_back(first + double(i) * step);
  return out;
}
}  // namespace

std::string svg_line_chart(const Chart& c, int width, int height) {
  const double ml = 56, mr = 12, mt = 28, mb = 40;
  const double pw = width - ml - mr, ph = height - mt - mb;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  bool integer_x = true;  // epochs and steps: no ticks between integers
  for (const auto& s : c.series)
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      if (plottable(s.x[i]) && plottable(s.y[i])) {
        integer_x = integer_x && s.x[i] == std::floor(s.x[i]);
        x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
        y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
      }
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">{}</text>\n",
      width, height, width, height, width, height, width / 2, html_escape(c.title));
  if (!std::isfinite(x0)) {
    o += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n</svg>\n", width / 2,
                     height / 2);
    return o;
  }
  widen(x0, x1);
  widen(y0, y1);
  double ys = nice_step(y1 - y0, 5), xs = nice_step(x1 - x0, 6);
  if (integer_x) xs = std::max(xs, 1.0);
  y0 = std::floor(y0 / ys) * ys, y1 = std::ceil(y1 / ys) * ys;
  auto px = [&](double x) { return ml + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return mt + ph - (y - y0) / (y1 - y0) * ph; };
  for (double y : ticks(y0, y1, ys))
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>"
                     "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                     ml, py(y), ml + pw, py(y), ml - 4, py(y) + 4, tick_label(y));
  for (double x : ticks(std::ceil(x0 / xs) * xs, x1, xs))
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n", px(x), mt + ph + 14,
                     tick_label(x));
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#999\"/>\n", ml, mt, pw, ph);
  o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", ml + pw / 2, height - 6,
                   html_escape(c.x_label));
  o += fmt::format("<text transform=\"translate(12,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", mt + ph / 2,
                   html_escape(c.y_label));
  for (const Marker& m : c.markers) {
    if (!(m.x >= x0 && m.x <= x1)) continue;
    if (m.strong)
      o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ff7f0e\" "
                       "stroke-width=\"1.5\" stroke-dasharray=\"5,3\"><title>{3}</title></line>"
                       "<text x=\"{4:.1f}\" y=\"{5:.1f}\" fill=\"#c55a00\" font-size=\"10\">{3}</text>\n",
                       px(m.x), mt, mt + ph, html_escape(m.label), px(m.x) + 3, mt + ph - 4);
    else
      o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#bbb\" "
                       "stroke-dasharray=\"2,3\"><title>{3}</title></line>\n",
                       px(m.x), mt, mt + ph, html_escape(m.label));
  }
  std::string legend;
  size_t longest = 0;
  for (size_t k = 0; k < c.series.size(); ++k) {
    const Series& s = c.series[k];
    const char* color = kColors[k % std::size(kColors)];
    std::string pts;
    std::string dots;
    size_t finite = 0;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i)
      finite += plottable(s.x[i]) && plottable(s.y[i]);
    const bool with_dots = finite <= std::max<size_t>(s.dots_up_to, 1);
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!plottable(s.x[i]) || !plottable(s.y[i])) continue;
      pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", px(s.x[i]), py(s.y[i]));
      if (with_dots)
        dots += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"2.5\" fill=\"{}\"/>", px(s.x[i]), py(s.y[i]), color);
    }
    if (!pts.empty())
      o += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" points=\"{}\"/>{}\n", color,
                       with_dots ? "2" : "1.5", pts, dots);
    legend += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                          "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
                          ml + 8, mt + 6 + 14.0 * double(k), color, ml + 22, mt + 15 + 14.0 * double(k), html_escape(s.name));
    longest = std::max(longest, s.name.size());
  }
  // The legend over a translucent white box, so a curve passing under it does not hide it.
  if (!c.series.empty())
    o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"white\" "
                     "fill-opacity=\"0.8\"/>\n",
                     ml + 4, mt + 3, 22 + 6.2 * double(longest), 4 + 14.0 * double(c.series.size()));
  o += legend + "</svg>\n";
  return o;
}

std::string html_confusion_matrix(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m) {
  std::string o = "<table class=\"cm\">\n<tr><th>true \\ predicted</th>";
  for (size_t j = 0; j < m.size(); ++j) o += "<th>" + html_escape(j < names.size() ? names[j] : std::to_string(j)) + "</th>";
  o += "<th>accuracy</th></tr>\n";
  for (size_t i = 0; i < m.size(); ++i) {
    int64_t total = 0;
    for (int64_t v : m[i]) total += v;
    o += "<tr><th>" + html_escape(i < names.size() ? names[i] : std::to_string(i)) + "</th>";
    for (size_t j = 0; j < m[i].size(); ++j) {
      double frac = total ? double(m[i][j]) / double(total) : 0.0;
      // Diagonal cells in blue, errors in red; stronger for a larger share of the row.
      int a = int(std::lround(frac * 200));
      std::string bg = i == j ? fmt::format("rgba(31,119,180,{:.2f})", a / 255.0)
                              : fmt::format("rgba(214,39,40,{:.2f})", std::min(1.0, 3 * a / 255.0));
      o += fmt::format("<td style=\"background:{}\">{}</td>", bg, m[i][j]);
    }
    o += fmt::format("<td>{:.1f}%</td></tr>\n", total ? 100.0 * double(m[i][i < m[i].size() ? i : 0]) / double(total) : 0.0);
  }
  o += "</table>\n";
  return o;
}

std::vector<ConfusedPair> most_confused_pairs(const std::vector<std::vector<int64_t>>& m, size_t n) {
  std::vector<ConfusedPair> all;
  for (size_t i = 0; i < m.size(); ++i) {
    int64_t total = 0;
    for (int64_t v : m[i]) total += v;
    for (size_t j = 0; j < m[i].size(); ++j)
      if (i != j && m[i][j] > 0) all.push_back({i, j, m[i][j], total ? double(m[i][j]) / double(total) : 0.0});
  }
  auto before = [](const ConfusedPair& a, const ConfusedPair& b) {
    if (a.count != b.count) return a.count > b.count;
    return a.true_class != b.true_class ? a.true_class < b.true_class : a.predicted < b.predicted;
  };
  const size_t k = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(k), all.end(), before);
  all.resize(k);
  return all;
}

std::vector<ClassAccuracy> worst_classes(const std::vector<std::vector<int64_t>>& m, size_t n) {
  std::vector<ClassAccuracy> all;
  for (size_t i = 0; i < m.size(); ++i) {
    ClassAccuracy c{i, i < m[i].size() ? m[i][i] : 0, 0};
    for (int64_t v : m[i]) c.total += v;
    if (c.total > 0) all.push_back(c);
  }
  auto before = [](const ClassAccuracy& a, const ClassAccuracy& b) {
    return a.accuracy() != b.accuracy() ? a.accuracy() < b.accuracy() : a.cls < b.cls;
  };
  const size_t k = std::min(n, all.size());
  std::partial_sort(all.begin(), all.begin() + std::ptrdiff_t(k), all.end(), before);
  all.resize(k);
  return all;
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}
std::string class_name(const std::vector<std::string>& names, size_t i) {
  return i < names.size() ? names[i] : std::to_string(i);
}
}  // namespace

std::string confusion_csv(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m) {
  // Appended piecewise: `"," + std::string` trips GCC 12's -Wrestrict false positive here.
  std::string o = "true \\ predicted";
  for (size_t j = 0; j < m.size(); ++j) o += ',', o += csv_field(class_name(names, j));
  o += "\n";
  for (size_t i = 0; i < m.size(); ++i) {
    o += csv_field(class_name(names, i));
    for (int64_t v : m[i]) o += ',', o += std::to_string(v);
    o += "\n";
  }
  return o;
}

std::string html_confusion_summary(const std::vector<std::string>& names, const std::vector<std::vector<int64_t>>& m,
                                   const std::string& csv_name) {
  std::string o = fmt::format("<p>{} classes: too many for a readable matrix. The whole matrix is in <a href=\"{}\">{}"
                              "</a> next to this report; here are the most-confused pairs and the classes of lowest "
                              "accuracy.</p>\n",
                              m.size(), html_escape(csv_name), html_escape(csv_name));
  o += "<h3>Most-confused pairs</h3>\n<table>\n<tr><th>true class</th><th>predicted as</th><th>samples</th>"
       "<th>share of the true class</th></tr>\n";
  for (const ConfusedPair& p : most_confused_pairs(m, kConfusionSummaryRows))
    o += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}%</td></tr>\n",
                     html_escape(class_name(names, p.true_class)), html_escape(class_name(names, p.predicted)), p.count,
                     100 * p.share);
  o += "</table>\n<h3>Lowest per-class accuracy</h3>\n<table>\n<tr><th>class</th><th>accuracy</th><th>correct</th>"
       "<th>samples</th></tr>\n";
  for (const ClassAccuracy& c : worst_classes(m, kConfusionSummaryRows))
    o += fmt::format("<tr><td>{}</td><td>{:.1f}%</td><td>{}</td><td>{}</td></tr>\n",
                     html_escape(class_name(names, c.cls)), 100 * c.accuracy(), c.correct, c.total);
  return o + "</table>\n";
}

namespace {
std::string kv_table(const std::vector<std::pair<std::string, std::string>>& rows) {
  std::string o = "<table class=\"kv\">\n";
  for (const auto& [k, v] : rows) o += "<tr><th>" + html_escape(k) + "</th><td>" + html_escape(v) + "</td></tr>\n";
  return o + "</table>\n";
}
}  // namespace

std::string render_report_html(const ReportData& d) {
  std::string o =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html_escape(d.title) +
      "</title>\n<style>\nbody{font-family:sans-serif;margin:24px;color:#222}\n"
      "table{border-collapse:collapse;margin:8px 0 16px}\nth,td{border:1px solid #ddd;padding:3px 8px;text-align:right}\n"
      "table.kv th{text-align:left;background:#f6f6f6}\ntable.kv td{text-align:left}\n"
      ".charts svg{margin:4px;border:1px solid #eee}\npre{background:#f6f6f6;padding:8px;overflow-x:auto}\n</style>\n</head>\n<body>\n<h1>" +
      html_escape(d.title) + "</h1>\n";
  if (!d.summary.empty()) o += "<h2>Summary</h2>\n" + kv_table(d.summary);
  if (!d.charts.empty()) {
    o += "<h2>Training curves</h2>\n<div class=\"charts\">\n";
    for (const auto& c : d.charts) o += svg_line_chart(c);
    o += "</div>\n";
  }
  if (!d.table_rows.empty()) {
    o += "<h2>Epochs</h2>\n<table>\n<tr>";
    for (const auto& h : d.table_header) o += "<th>" + html_escape(h) + "</th>";
    o += "</tr>\n";
    for (const auto& r : d.table_rows) {
      o += "<tr>";
      for (const auto& c : r) o += "<td>" + html_escape(c) + "</td>";
      o += "</tr>\n";
    }
    o += "</table>\n";
  }
  if (!d.confusion.empty())
    o += "<h2>Confusion matrix (test set)</h2>\n" +
         (d.confusion.size() > kFullConfusionMaxClasses
              ? html_confusion_summary(d.class_names, d.confusion, d.confusion_csv_name)
              : html_confusion_matrix(d.class_names, d.confusion));
  for (const auto& [heading, text] : d.preformatted)
    o += "<h2>" + html_escape(heading) + "</h2>\n<pre>" + html_escape(text) + "</pre>\n";
  if (!d.environment.empty()) o += "<h2>Environment</h2>\n" + kv_table(d.environment);
  if (!d.config.empty()) o += "<h2>Configuration</h2>\n" + kv_table(d.config);
  o += "</body>\n</html>\n";
  return o;
}

void write_report(const std::filesystem::path& path, const ReportData& d) {
  if (d.confusion.size() > kFullConfusionMaxClasses) {  // the whole matrix the report only summarises
    const std::string csv = confusion_csv(d.class_names, d.confusion);
    write_file_atomic(path.parent_path() / d.confusion_csv_name,
                      std::span(reinterpret_cast<const uint8_t*>(csv.data()), csv.size()));
  }
  std::string html = render_report_html(d);
  write_file_atomic(path, std::span(reinterpret_cast<const uint8_t*>(html.data()), html.size()));
}

}  // namespace ember::io
