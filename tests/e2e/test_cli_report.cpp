// report.html of a real run (issue 15 item 15): per-step loss and learning-rate curves even for a
// one-epoch run, the label-smoothed train loss named as such, the model summary, date and version,
// resume points marked, and the run's name kept after a resume.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_test_util.h"

namespace fs = std::filesystem;
using ember::e2e::read_text;
using ember::e2e::run_ember;

namespace {

class CliReport : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_e2e_report_" + std::to_string(getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    ember::e2e::write_shape_images(dir / "shapes" / "train", 40, 0);
    ember::e2e::write_shape_images(dir / "shapes" / "test", 5, 100);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string train(const std::string& extra) const {
    // --val-split 0: all 120 training images are trained on, so the step counts below are round.
    return "train --data " + (dir / "shapes").string() + " --model lenet5 --batch-size 16 --threads 2 --val-split 0 " +
           extra;
  }
};

// The <svg> of the chart titled `title`.
std::string chart(const std::string& html, const std::string& title) {
  const size_t t = html.find(">" + title + "</text>");
  if (t == std::string::npos) return "";
  const size_t start = html.rfind("<svg", t), end = html.find("</svg>", t);
  return html.substr(start, end - start);
}

size_t points_of_first_polyline(const std::string& svg) {
  std::smatch m;
  if (!std::regex_search(svg, m, std::regex("<polyline[^>]*points=\"([^\"]*)\""))) return 0;
  const std::string pts = m[1];
  return size_t(std::count(pts.begin(), pts.end(), ' ')) + 1;
}

}  // namespace

TEST_F(CliReport, OneEpochRunHasPerStepCurvesModelDateAndVersion) {
  const std::string run_dir = (dir / "run").string();
  auto r = run_ember(train("--epochs 1 --run-dir " + run_dir));
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = read_text(run_dir + "/report.html");
  EXPECT_EQ(html.find("no data"), std::string::npos) << html;
  // 120 images / batch 16 = 8 steps: one point per step, so lines and not lone dots.
  for (const char* title : {"Loss", "Accuracy", "Learning rate", "Throughput"}) {
    const std::string svg = chart(html, title);
    ASSERT_FALSE(svg.empty()) << "no chart titled " << title;
    EXPECT_EQ(points_of_first_polyline(svg), 8u) << title << ":\n" << svg;
  }
  EMBER_EXPECT_HAS(chart(html, "Loss"), "train loss (with label smoothing 0.1)");
  EMBER_EXPECT_HAS(chart(html, "Loss"), "test loss (cross-entropy)");
  EMBER_EXPECT_HAS(html, "<h2>Model</h2>\n<pre>");
  EMBER_EXPECT_HAS(html, "conv1 (Conv2d)");
  EMBER_EXPECT_HAS(html, "<th>ember version</th>");
  EXPECT_TRUE(std::regex_search(html, std::regex("<th>report written</th><td>20[0-9]{2}-[0-9]{2}-[0-9]{2} ")));
  EMBER_EXPECT_HAS(html, "<title>ember run run: lenet5 on image folder shapes</title>");
  {
    // Issue 48: the summary says which device trained the model (not only the environment table).
    const std::string summary = html.substr(html.find("<h2>Summary</h2>"), html.find("</table>", html.find("<h2>Summary</h2>")) -
                                                                            html.find("<h2>Summary</h2>"));
    EMBER_EXPECT_HAS(summary, "<th>device</th><td>cpu");
  }

  // Without label smoothing the train loss is plain cross-entropy and named plainly.
  // --log-every 3 over 8 steps: records at steps 3, 6 and the epoch's last, shorter interval (8).
  r = run_ember(train("--epochs 1 --label-smoothing 0 --log-every 3 --run-dir " + (dir / "plain").string()));
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string plain = read_text((dir / "plain" / "report.html").string());
  EXPECT_EQ(plain.find("label smoothing"), std::string::npos);
  EMBER_EXPECT_HAS(chart(plain, "Loss"), ">train loss</text>");
  EXPECT_EQ(points_of_first_polyline(chart(plain, "Learning rate")), 3u);
}

TEST_F(CliReport, ResumeIsMarkedAndTheRunKeepsItsName) {
  const std::string in_dir = "cd " + dir.string() + " && ";
  auto r = run_ember(train("--epochs 2 --name myrun --stop-after-steps 5"), in_dir);
  ASSERT_EQ(r.code, 130) << r.out;
  r = run_ember("train --resume runs/myrun --threads 2", in_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string html = read_text((dir / "runs" / "myrun" / "report.html").string());
  EMBER_EXPECT_HAS(html, "<title>ember run myrun: lenet5 on image folder shapes</title>");
  EMBER_EXPECT_HAS(chart(html, "Loss"), ">resumed at step 5</text>");
  EMBER_EXPECT_HAS(chart(html, "Learning rate"), "resumed at step 5");
  EMBER_EXPECT_HAS(html, "<th>resumed</th><td>1 time");
  EXPECT_EQ(points_of_first_polyline(chart(html, "Learning rate")), 16u);  // both epochs' steps
  nlohmann::json cfg = nlohmann::json::parse(read_text((dir / "runs" / "myrun" / "config.json").string()));
  EXPECT_EQ(cfg["name"], "myrun");
}
