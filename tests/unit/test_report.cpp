// report.html: golden SVG for a tiny chart, well-formedness (balanced tags), escaping, and no crash
// on empty or NaN series.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "ember/io/report.h"
#include "support/child_process.h"

using namespace ember::io;

namespace {
// Counts opening minus closing tags of `tag` (self-closing ones are balanced by themselves).
int balance(const std::string& s, const std::string& tag) {
  int open = 0, close = 0;
  std::regex o("<" + tag + "[ >]"), c("</" + tag + ">"), sc("<" + tag + " [^>]*/>");
  open = int(std::distance(std::sregex_iterator(s.begin(), s.end(), o), std::sregex_iterator()));
  close = int(std::distance(std::sregex_iterator(s.begin(), s.end(), c), std::sregex_iterator()));
  int selfc = int(std::distance(std::sregex_iterator(s.begin(), s.end(), sc), std::sregex_iterator()));
  return open - close - selfc;
}
}  // namespace

TEST(Report, GoldenTinyChart) {
  Chart c{"loss", "epoch", "loss", {{"train", {1, 2}, {1.0, 0.5}}}};
  std::string svg = svg_line_chart(c, 200, 100);
  EXPECT_TRUE(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"200\" height=\"100\""));
  // x from 1..2 maps to [56, 188], y from 0.5..1 (ticks at 0.1) maps to [60, 28].
  EXPECT_NE(svg.find("points=\"56.0,28.0 188.0,60.0\""), std::string::npos) << svg;
  EXPECT_EQ(balance(svg, "svg"), 0);
  EXPECT_EQ(svg, svg_line_chart(c, 200, 100));  // deterministic
}

TEST(Report, EmptyAndNaNSeriesDoNotCrash) {
  Chart empty{"acc", "epoch", "acc", {}};
  EXPECT_NE(svg_line_chart(empty).find("no data"), std::string::npos);
  Chart nan{"acc", "epoch", "acc", {{"test", {1, 2, 3}, {NAN, INFINITY, NAN}}}};
  EXPECT_NE(svg_line_chart(nan).find("no data"), std::string::npos);
  Chart partial{"acc", "epoch", "acc", {{"test", {1, 2, 3}, {0.5, NAN, 0.7}}}};
  std::string s = svg_line_chart(partial);
  EXPECT_EQ(s.find("nan"), std::string::npos);
  EXPECT_EQ(s.find("inf"), std::string::npos);
  Chart flat{"acc", "epoch", "acc", {{"one", {1}, {0.5}}}};
  EXPECT_NE(svg_line_chart(flat).find("<circle"), std::string::npos);
}

// Issue 22: a run diverged with --lr 1e39 logs a constant learning rate of 1e39; the chart widened
// a flat series by +-0.5, which at 1e39 changes nothing, and its tick loop then added a step that
// left the value unchanged: report.html grew until the host ran out of memory. Flat, nearly flat
// and huge series now draw a handful of ticks, in a child with a time and memory limit.
TEST(Report, HugeFlatAndNearlyFlatSeriesDrawAFewTicks) {
  const auto r = ember::test::run_in_child([] {
    std::string out;
    const std::vector<std::vector<double>> cases = {
        {1e39, 1e39, 1e39},                      // --lr 1e39 --schedule none
        {1e39, std::nextafter(1e39, 1e40)},      // nearly flat: the range is below one ulp's step
        {-1e299, 1e299},                         // the widest range a chart keeps
        {1e305, 2.5, -1e308, 3.0},               // values beyond 1e300 are left out, like inf
        {1e-300, 1e-300},                        // tiny and flat
    };
    for (const auto& ys : cases) {
      Series s{"learning rate", {}, ys};
      for (size_t i = 0; i < ys.size(); ++i) s.x.push_back(double(i + 1));
      const std::string svg = svg_line_chart({"Learning rate", "step", "lr", {s}});
      size_t texts = 0;
      for (size_t p = svg.find("<text"); p != std::string::npos; p = svg.find("<text", p + 1)) ++texts;
      out += std::to_string(svg.size()) + " " + std::to_string(texts) + " " +
             (svg.find("<polyline") != std::string::npos ? "line" : "none") + "\n";
    }
    return out;
  }, /*timeout_s=*/20, /*max_extra_bytes=*/size_t(256) << 20);
  ASSERT_FALSE(r.timed_out) << "svg_line_chart did not return";
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream in(r.output);
  size_t bytes = 0, texts = 0;
  std::string line;
  for (int k = 0; k < 5; ++k) {
    ASSERT_TRUE(in >> bytes >> texts >> line) << r.output;
    EXPECT_LT(bytes, 8000u) << "case " << k;
    EXPECT_LE(texts, 30u) << "case " << k;  // title, axis labels, legend and ~5 ticks per axis
    EXPECT_GE(texts, 6u) << "case " << k;
    EXPECT_EQ(line, "line") << "case " << k;
  }
}

TEST(Report, FullPageIsBalancedAndEscaped) {
  ReportData d;
  d.title = "run <a&b>";
  d.summary = {{"test accuracy", "91.2%"}};
  d.environment = {{"device", "cpu — no NVIDIA driver"}};
  d.charts = {{"loss", "epoch", "loss", {{"train", {1, 2, 3}, {0.6, 0.4, 0.3}}, {"test", {1, 2, 3}, {0.5, 0.4, 0.35}}}}};
  d.table_header = {"epoch", "loss"};
  d.table_rows = {{"1", "0.6"}};
  d.class_names = {"a", "b"};
  d.confusion = {{9, 1}, {2, 8}};
  std::string h = render_report_html(d);
  EXPECT_NE(h.find("run &lt;a&amp;b&gt;"), std::string::npos);
  EXPECT_EQ(h.find("<a&b>"), std::string::npos);
  for (const char* tag : {"html", "body", "table", "tr", "svg", "h2"}) EXPECT_EQ(balance(h, tag), 0) << tag;
  EXPECT_NE(h.find("90.0%"), std::string::npos);  // row accuracy of class a
  EXPECT_EQ(h.find("<script"), std::string::npos);  // self-contained, static
  EXPECT_EQ(h.find("http://www.w3.org/2000/svg"), h.find("http"));  // no external links

  auto path = std::filesystem::temp_directory_path() / "ember_test_report.html";
  write_report(path, d);
  std::ifstream in(path);
  std::string back((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(back, h);
  std::filesystem::remove(path);
}

// Issue 15 item 15: resume points and epoch ends as vertical markers, dense per-step series as
// plain lines, and the model summary as escaped preformatted text.
TEST(Report, MarkersDenseSeriesAndPreformattedText) {
  Series dense{"train loss", {}, {}};
  for (int i = 1; i <= 100; ++i) dense.x.push_back(i), dense.y.push_back(1.0 / i);
  Series sparse{"test loss", {50, 100}, {0.3, 0.2}};
  Chart c{"Loss", "step", "loss", {dense, sparse}, {{50, "end of epoch 1", false}, {30, "resumed at step 30", true},
                                                     {500, "outside the data", true}}};
  const std::string svg = svg_line_chart(c);
  // 100 points: a line without dots; the 2-point test series keeps its dots.
  size_t circles = 0;
  for (size_t p = svg.find("<circle"); p != std::string::npos; p = svg.find("<circle", p + 1)) ++circles;
  EXPECT_EQ(circles, 2u) << svg;
  EXPECT_NE(svg.find("stroke=\"#ff7f0e\" stroke-width=\"1.5\" stroke-dasharray=\"5,3\"><title>resumed at step 30</title>"),
            std::string::npos) << svg;
  EXPECT_NE(svg.find(">resumed at step 30</text>"), std::string::npos);
  EXPECT_NE(svg.find("<title>end of epoch 1</title>"), std::string::npos);
  EXPECT_EQ(svg.find("outside the data"), std::string::npos);  // beyond the x range: not drawn
  EXPECT_EQ(balance(svg, "svg"), 0);
  EXPECT_EQ(balance(svg, "line"), 0);

  ReportData d;
  d.title = "t";
  d.preformatted = {{"Model", "conv1 (Conv2d) <6 ch>"}};
  const std::string h = render_report_html(d);
  EXPECT_NE(h.find("<h2>Model</h2>\n<pre>conv1 (Conv2d) &lt;6 ch&gt;</pre>"), std::string::npos) << h;
  EXPECT_EQ(balance(h, "pre"), 0);
}

// 2,000 classes made a 200 MB report (issue 22): above kFullConfusionMaxClasses the report shows
// the most-confused pairs and the worst classes, and write_report puts the whole matrix in a CSV.
TEST(Report, BigConfusionMatricesAreSummarisedWithTheMatrixInACsv) {
  const size_t n = 2000;
  std::vector<std::vector<int64_t>> m(n, std::vector<int64_t>(n, 0));
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    names.push_back("class" + std::to_string(i));
    m[i][i] = 5;
  }
  m[7][3] = 4, m[7][7] = 1;  // class7 mostly read as class3
  m[9][1] = 2;
  names[9] = "a, \"quoted\" name";
  ReportData d;
  d.title = "big";
  d.class_names = names;
  d.confusion = m;
  const std::string html = render_report_html(d);
  EXPECT_LT(html.size(), 20000u);
  EXPECT_NE(html.find("2000 classes: too many for a readable matrix"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"confusion.csv\">"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>class7</td><td>class3</td><td>4</td><td>80.0%</td></tr>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>class7</td><td>20.0%</td><td>1</td><td>5</td></tr>"), std::string::npos);
  EXPECT_EQ(balance(html, "table"), 0);

  const auto pairs = most_confused_pairs(m, 5);
  ASSERT_EQ(pairs.size(), 2u);  // only non-zero off-diagonal cells
  EXPECT_EQ(pairs[0].true_class, 7u);
  EXPECT_EQ(pairs[0].predicted, 3u);
  EXPECT_EQ(pairs[1].true_class, 9u);
  const auto worst = worst_classes(m, 3);
  ASSERT_EQ(worst.size(), 3u);
  EXPECT_EQ(worst[0].cls, 7u);
  EXPECT_EQ(worst[1].cls, 9u);  // 5 of 7

  const auto dir = std::filesystem::temp_directory_path() / ("ember_report_csv_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_report(dir / "report.html", d);
  std::ifstream f(dir / "confusion.csv");
  std::string header, row;
  std::getline(f, header);
  EXPECT_TRUE(header.starts_with("true \\ predicted,class0,class1,")) << header.substr(0, 60);
  EXPECT_NE(header.find(",\"a, \"\"quoted\"\" name\","), std::string::npos);
  for (int i = 0; i <= 7; ++i) std::getline(f, row);
  EXPECT_TRUE(row.starts_with("class7,0,0,0,4,0,0,0,1,0")) << row.substr(0, 40);
  std::filesystem::remove_all(dir);

  // At 50 classes and below: the matrix itself, no CSV.
  d.confusion.assign(3, std::vector<int64_t>(3, 1));
  d.class_names = {"a", "b", "c"};
  EXPECT_NE(render_report_html(d).find("true \\ predicted"), std::string::npos);
}

// Issue 48: a run of 20000 steps had an axis labelled "1e+04"; whole ticks of 10,000 and more are
// written out, with thousands separators.
TEST(Report, LargeWholeTicksAreWrittenOut) {
  Series s{"loss", {0, 5000, 10000, 15000, 20000}, {2.0, 1.0, 0.5, 0.4, 0.3}};
  const std::string svg = svg_line_chart({"Training loss", "step", "loss", {s}});
  EXPECT_EQ(svg.find("e+0"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">10,000<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">20,000<"), std::string::npos) << svg;
}
