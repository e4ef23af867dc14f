// Which checkpoint eval, predict and export read (issue 22): a run's best one by default (the epoch
// validation chose, like Keras's restore_best_weights), `--checkpoint last` for the last one, and a
// summary that says which epoch that is.
#include <gtest/gtest.h>

#include "support/files.h"
#include "ember/train/checkpoint.h"
#include "ember/train/resume.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

namespace {
CheckpointManifest at_epoch(int64_t epoch, double best) {
  CheckpointManifest m;
  m.model = "mlp", m.dataset = "fashion-mnist", m.epoch = epoch, m.step = 10 * epoch, m.best_metric = best;
  m.config_json = R"({"val_split": 0.1})";
  return m;
}
}  // namespace

TEST(TrainChooseCheckpoint, BestByDefaultLastWhenAskedAndTheSummarySaysWhich) {
  ember::test::TempDir run("choose");
  const fs::path ck = run.path() / "checkpoints";
  save_checkpoint(ck, "latest", at_epoch(1, 0.5), {{"model/x", ones({2})}});
  // Before any epoch ended there is no best.json: the last one, said so.
  ChosenCheckpoint c = choose_checkpoint(run.path(), "");
  EXPECT_EQ(c.path, ck / "latest.json");
  EXPECT_EQ(c.which, "last");
  EXPECT_NE(c.summary.find("there is no best"), std::string::npos) << c.summary;
  tag_checkpoint(ck, "latest", "best");
  c = choose_checkpoint(run.path(), "");
  EXPECT_EQ(c.path, ck / "best.json");
  EXPECT_EQ(c.summary, "the best epoch, 1 (validation accuracy 50.00%), also the last");
  save_checkpoint(ck, "latest", at_epoch(2, 0.5), {{"model/x", full({2}, 2.0)}});  // not better
  c = choose_checkpoint(run.path(), "");
  EXPECT_EQ(c.path, ck / "best.json");
  EXPECT_EQ(c.which, "best");
  EXPECT_EQ(c.summary, "the best epoch, 1 of 2 (validation accuracy 50.00%); --checkpoint last for epoch 2");
  c = choose_checkpoint(ck, "last");  // the checkpoints/ directory works too
  EXPECT_EQ(c.path, ck / "latest.json");
  EXPECT_EQ(c.summary, "the last checkpoint, epoch 2 (the best was epoch 1: --checkpoint best)");
  EXPECT_EQ(load_checkpoint(choose_checkpoint(run.path(), "best").path).manifest.epoch, 1);
  // A file is one checkpoint already: used as it is, and --checkpoint with it is refused.
  c = choose_checkpoint(ck / "latest.json", "");
  EXPECT_EQ(c.path, ck / "latest.json");
  EXPECT_EQ(c.which, "");
  ember::test::expect_error<ValueError>([&] { choose_checkpoint(ck / "latest.json", "best"); },
                                        "is one checkpoint file already");
  ember::test::expect_error<ValueError>([&] { choose_checkpoint(run.path(), "first"); }, "expected best or last");
}
