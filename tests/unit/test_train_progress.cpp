// Progress bar rendering and rate limiting, and the metrics.jsonl writer/reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ember/core/error.h"
#include "ember/train/metrics.h"
#include "ember/train/progress.h"

using namespace ember::train;

TEST(TrainProgress, RenderLooksLikeKeras) {
  ProgressBar bar(100, true, stdout, 0.05, 10);
  EXPECT_EQ(bar.render(25, {{"loss", 0.5}, {"acc", 0.75}}, 1234.4, 5.0, 200),
            " 25/100 [==>.......] ETA 0:15 - loss: 0.5000 - acc: 0.7500 - 1234 samples/s");
  EXPECT_EQ(bar.render(100, {}, 0, 65.0, 200), "100/100 [==========] in 1:05");
  EXPECT_EQ(bar.render(0, {}, 0, 0.0, 200), "  0/100 [>.........] ETA ?");
  EXPECT_EQ(ProgressBar::format_duration(3725), "1:02:05");
}

// Issue 15 item 13: one line per redraw at any width (never the last column), the epoch i/N and the
// run's ETA always there, and fields dropped least important first as the terminal narrows.
TEST(TrainProgress, FitsTheTerminalWidthAndShowsEpochAndRunEta) {
  ProgressBar bar(469, true);
  // Epoch 3 of 15; whole epochs took 20 s so far; 120 steps done in 5 s: 14.5 s left in this
  // epoch, 12 more epochs of 20 s.
  bar.set_position({3, 15, 20.0});
  const NamedValues values = {{"loss", 0.4512}, {"acc", 0.8421}};
  const std::string w120 = bar.render(120, values, 2310, 5.0, 120);
  const std::string w80 = bar.render(120, values, 2310, 5.0, 80);
  const std::string w40 = bar.render(120, values, 2310, 5.0, 40);
  EXPECT_EQ(w120,
            "epoch  3/15 120/469 [======>....................] ETA 0:15 (run ETA 4:15) - loss: 0.4512 - acc: 0.8421 - "
            "2310 samples/s");
  EXPECT_EQ(w80, "epoch  3/15 120/469 [====>.............] ETA 0:15 (run ETA 4:15) - loss: 0.4512");
  EXPECT_EQ(w40, "epoch  3/15 120/469 ETA 0:15 (run 4:15)");
  for (int cols = 10; cols <= 200; ++cols) {
    const std::string line = bar.render(120, values, 2310, 5.0, cols);
    ASSERT_LE(line.size(), size_t(cols - 1)) << "at " << cols << " columns: " << line;
    if (cols >= 40) {
      EXPECT_NE(line.find("epoch  3/15"), std::string::npos) << line;
      EXPECT_TRUE(line.find("(run 4:15)") != std::string::npos || line.find("(run ETA 4:15)") != std::string::npos)
          << line;
    }
  }
  // Without a measured epoch, the run's ETA comes from this epoch's step rate: 469 steps / 24 per s.
  bar.set_position({1, 2, 0.0});
  EXPECT_EQ(bar.render(469, {}, 0, 19.0, 80), "epoch 1/2 469/469 [==============================] in 0:19 (run ETA 0:19)");
  bar.set_position({2, 2, 0.0});  // the last epoch: its ETA is the run's
  EXPECT_EQ(bar.render(469, {}, 0, 19.0, 80), "epoch 2/2 469/469 [==============================] in 0:19");
}

TEST(TrainProgress, RedrawsStayOnOneLineOfANarrowTerminal) {
  std::FILE* f = std::tmpfile();
  ProgressBar bar(1000, true, f, 0.0, 30, 80);
  bar.set_position({1, 3, 0.0});
  for (int s = 1; s <= 1000; ++s) bar.update(s, {{"loss", 1.0 / s}, {"acc", 0.5}}, 100.0 * s, 0.01 * s);
  bar.finish();
  std::rewind(f);
  std::string all;
  for (int ch; (ch = std::fgetc(f)) != EOF;) all += char(ch);
  std::fclose(f);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 1);
  size_t start = 0;
  while (start < all.size()) {  // every '\r'-separated redraw fits in 79 columns
    size_t end = all.find_first_of("\r\n", start + 1);
    if (end == std::string::npos) end = all.size();
    EXPECT_LE(end - start - (all[start] == '\r' ? 1 : 0), 79u);
    start = end;
  }
}

TEST(TrainProgress, TerminalColumnsFallsBackToColumnsThenEighty) {
  std::FILE* f = std::tmpfile();  // not a terminal: TIOCGWINSZ fails
  const char* old = std::getenv("COLUMNS");
  std::string saved = old ? old : "";
  setenv("COLUMNS", "132", 1);
  EXPECT_EQ(ProgressBar::terminal_columns(f), 132);
  setenv("COLUMNS", "wide", 1);
  EXPECT_EQ(ProgressBar::terminal_columns(f), 80);
  unsetenv("COLUMNS");
  EXPECT_EQ(ProgressBar::terminal_columns(f), 80);
  if (old) setenv("COLUMNS", saved.c_str(), 1);
  std::fclose(f);
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

TEST(TrainProgress, SilentWhenNotATerminalWithoutPlainLines) {
  std::FILE* f = std::tmpfile();
  ProgressBar bar(10, false, f);
  for (int s = 1; s <= 10; ++s) EXPECT_FALSE(bar.update(s, {{"loss", 1}}, 0, double(s)));
  bar.finish();
  EXPECT_EQ(std::ftell(f), 0);
  std::fclose(f);
}

// Issue 48 item 9: `ember train | tee log` and nohup printed nothing inside an epoch (93 s of
// silence). Not on a terminal, a plain line (no bar, no '\r') every plain_every seconds, never at
// the last step (the epoch's own line follows).
TEST(TrainProgress, APlainLineEveryFewSecondsWhenNotATerminal) {
  ProgressBar bar(100, false, stdout, 0.05, 30, 0, 20);
  bar.set_position({2, 3, 0});
  std::string written;
  bar.set_writer([&](const std::string& t) { written += t; });
  int lines = 0;
  for (int s = 1; s <= 100; ++s) lines += bar.update(s, {{"loss", 0.5}}, 100, 0.93 * s);  // 93 s in all
  EXPECT_EQ(lines, 4);  // at 20.5, 40.9, 61.4 and 81.8 s
  EXPECT_EQ(written.find('\r'), std::string::npos) << written;
  EXPECT_EQ(written.find('['), std::string::npos) << written;
  EXPECT_EQ(written.substr(0, written.find('\n')), "epoch 2/3  22/100 ETA 1:13 (run ETA 2:46) - loss: 0.5000 - 100 samples/s");
}

// The rule both front-ends follow (`ember train --verbose`, ember.fit(verbose=)), as Keras's fit.
TEST(TrainProgress, VerbosityIsKerasFitsRule) {
  EXPECT_EQ(parse_verbosity("auto"), Verbosity::ProgressBar);
  EXPECT_EQ(parse_verbosity("1"), Verbosity::ProgressBar);
  EXPECT_EQ(parse_verbosity("2"), Verbosity::EpochLines);
  EXPECT_EQ(parse_verbosity("0"), Verbosity::Silent);
  EXPECT_THROW(parse_verbosity("3"), ember::ValueError);
  const ProgressRule tty = progress_rule(Verbosity::ProgressBar, true), log = progress_rule(Verbosity::ProgressBar, false);
  EXPECT_TRUE(tty.banner && tty.epoch_lines && tty.redraw);
  EXPECT_EQ(tty.plain_every, 0);
  EXPECT_TRUE(log.banner && log.epoch_lines && !log.redraw);
  EXPECT_EQ(log.plain_every, kPlainProgressSeconds);
  EXPECT_GE(kPlainProgressSeconds, 10);
  EXPECT_LE(kPlainProgressSeconds, 30);
  for (bool terminal : {true, false}) {
    const ProgressRule epochs = progress_rule(Verbosity::EpochLines, terminal);
    EXPECT_TRUE(epochs.banner && epochs.epoch_lines && !epochs.redraw && epochs.plain_every == 0);
    const ProgressRule silent = progress_rule(Verbosity::Silent, terminal);
    EXPECT_FALSE(silent.banner || silent.epoch_lines || silent.redraw || silent.plain_every > 0);
  }
}

TEST(TrainMetrics, WritesJsonLinesAndReadsThemBack) {
  auto path = std::filesystem::temp_directory_path() / "ember_test_metrics.jsonl";
  std::filesystem::remove(path);
  {
    MetricsWriter w(path);
    MetricRecord r{"step", 1, 10, {{"loss", 0.5}, {"acc", 0.8}}};
    r.time = 1796074002.5;
    w.write(r);
    w.write({"step", 1, 20, {{"loss", NAN}}});  // stamped with the time of writing
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
  // Every record carries the wall-clock time it was written (unix seconds) after kind/epoch/step.
  const size_t t = first.find(R"("time":)");
  ASSERT_NE(t, std::string::npos) << first;
  EXPECT_EQ(first.substr(0, t), R"({"kind":"step","epoch":1,"step":10,)");
  EXPECT_EQ(first.substr(first.find(",", t)), R"(,"loss":0.5,"acc":0.8})");
  auto recs = read_metrics(path);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].step, 10);
  EXPECT_EQ(recs[0].time, 1796074002.5);
  EXPECT_EQ(recs[0].values.size(), 2u);  // "time" is not a metric value
  EXPECT_GT(recs[2].time, 1.7e9);
  EXPECT_EQ(recs[1].kind, "epoch");
  EXPECT_DOUBLE_EQ(recs[2].get("loss"), 0.25);
  std::filesystem::remove(path);
}

TEST(TrainMetrics, UnwritablePathThrowsIOError) {
  EXPECT_THROW(MetricsWriter("/proc/ember-no-such-dir/metrics.jsonl"), ember::IOError);
}
