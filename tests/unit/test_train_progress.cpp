// Progress bar rendering and rate limiting, and the metrics.jsonl writer/reader.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ember/core/error.h"
#include "ember/train/metrics.h"
#include "ember/train/progress.h"

using namespace ember::train;

TEST(TrainProgress, RenderLooksLikeKeras) {
  ProgressBar bar(100, true, stdout, 0.05, 10);
  EXPECT_EQ(bar.render(25, {{"loss", 0.5}, {"acc", 0.75}}, 1234.4, 5.0),
            " 25/100 [==>.......] - ETA: 0:15 - loss: 0.5000 - acc: 0.7500 - 1234 samples/s");
  EXPECT_EQ(bar.render(100, {}, 0, 65.0), "100/100 [==========] - 1:05");
  EXPECT_EQ(bar.render(0, {}, 0, 0.0), "  0/100 [>.........] - ETA: ?");
  EXPECT_EQ(ProgressBar::format_duration(3725), "1:02:05");
}

TEST(TrainProgress, RedrawsAtMostEveryIntervalAndAlwaysAtTheEnd) {
  std::FILE* f = std::tmpfile();
  ProgressBar bar(10, true, f, 0.05);
  int drawn = 0;
  for (int s = 1; s <= 10; ++s) drawn += bar.update(s, {}, 0, 0.01 * s);  // 10 ms apart
  EXPECT_EQ(drawn, 3);  // t=0.01, t=0.06, and the last step
  bar.finish();
  std::fclose(f);
}

TEST(TrainProgress, SilentWhenNotATerminal) {
  std::FILE* f = std::tmpfile();
  ProgressBar bar(10, false, f);
  for (int s = 1; s <= 10; ++s) EXPECT_FALSE(bar.update(s, {{"loss", 1}}, 0, double(s)));
  bar.finish();
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
}

TEST(TrainMetrics, WritesJsonLinesAndReadsThemBack) {
  auto path = std::filesystem::temp_directory_path() / "ember_test_metrics.jsonl";
  std::filesystem::remove(path);
  {
    MetricsWriter w(path);
    w.write({"step", 1, 10, {{"loss", 0.5}, {"acc", 0.8}}});
    w.write({"step", 1, 20, {{"loss", NAN}}});
    w.write({"epoch", 1, 20, {{"test_acc", 0.9}}});
  }
  {
    std::ofstream torn(path, std::ios::app);
    torn << "{\"kind\":\"step\",\"epo";  // a crash mid-line
  }
  {
    MetricsWriter w(path);  // a resumed run re-logs step 20
    w.write({"step", 1, 20, {{"loss", 0.25}}});
  }
  std::ifstream in(path);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first, R"({"kind":"step","epoch":1,"step":10,"loss":0.5,"acc":0.8})");
  auto recs = read_metrics(path);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].step, 10);
  EXPECT_EQ(recs[1].kind, "epoch");
  EXPECT_DOUBLE_EQ(recs[2].get("loss"), 0.25);
  std::filesystem::remove(path);
}

TEST(TrainMetrics, UnwritablePathThrowsIOError) {
  EXPECT_THROW(MetricsWriter("/proc/ember-no-such-dir/metrics.jsonl"), ember::IOError);
}
