// The end of a run (run_end.h), the library call `ember train` and ember.fit share: the headline
// test accuracy is the final evaluation of the model eval, predict, export and ember.load give —
// the selected epoch's weights, evaluated as `ember eval` runs it — not the last epoch's (issue 48,
// item 4: "test accuracy: 100.00% ... best 95.83%" while `ember eval` said 95.83%).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "ember/autograd/node.h"
#include "ember/ops.h"
#include "ember/train/callbacks.h"
#include "ember/train/inference.h"
#include "ember/train/predict.h"
#include "ember/train/run_end.h"
#include "ember/train/run_files.h"
#include "ember/train/run_plan.h"
#include "support/files.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {


// Zeroes the model's weights at the end of the second epoch's training: that epoch then scores
// the share of class 0, so the selected epoch is the first and the last is another one.
class SpoilEpoch2 : public train::Callback {
 public:
  void on_step_end(train::FitContext& ctx) override {
    if (ctx.epoch != 1 || ctx.step_in_epoch != ctx.steps_per_epoch) return;
    autograd::NoGradGuard no_grad;
    for (Tensor& p : ctx.model.parameters()) p.fill_(0.0);
  }
};

}  // namespace

TEST(TrainRunEnd, TheHeadlineIsTheSelectedModelEvaluatedAsEmberEvalDoes) {
  test::TempDir dir("run_end");
  test::write_band_split(dir.path(), "train", 320);
  test::write_band_split(dir.path(), "t10k", 64);
  train::TrainSettings s;
  s.model = "lenet5", s.data_dir = dir.path().string(), s.run_dir = (dir.path() / "run").string();
  s.epochs = 2, s.batch_size = 16, s.threads = 1, s.workers = 0, s.seed = 3, s.precision = "fp32";
  s.val_split = 0.25, s.device = "cpu";
  const std::unique_ptr<const train::RunPlan> plan = train::plan_run(s, {});
  train::RunControls controls;
  controls.callbacks.push_back(std::make_shared<SpoilEpoch2>());
  const train::RunOutcome end = train::run_to_end(*plan, controls);
  ASSERT_EQ(end.ending, train::RunEnding::Finished) << end.message;
  ASSERT_EQ(end.fit.epochs.size(), 2u);
  ASSERT_GT(end.fit.epochs[0].val_acc, end.fit.epochs[1].val_acc) << "epoch 1 learned nothing: the case is moot";
  EXPECT_EQ(end.fit.best_epoch, 1);
  EXPECT_EQ(end.evaluated_epoch, 1);
  EXPECT_EQ(end.selected_on, "validation");
  EXPECT_EQ(end.last_epoch_test_acc, end.fit.epochs[1].test_acc);
  ASSERT_TRUE(end.test.has_value());
  // `ember eval RUN`'s numbers: the best checkpoint opened and evaluated by the same library calls.
  train::InferenceOptions io;
  io.path = (dir.path() / "run").string(), io.device = "cpu";
  const train::InferenceModel opened = train::open_for_inference(io, /*need_test=*/true);
  train::EvalOptions eo;
  eo.device = Device::cpu();
  const train::EvalResult eval = train::evaluate_inference(*opened.model, opened.precision, opened.test, eo);
  EXPECT_EQ(end.test->accuracy, eval.accuracy);  // bit for bit
  EXPECT_EQ(end.test->loss, eval.loss);
  EXPECT_EQ(end.test->confusion, eval.confusion);
  EXPECT_NE(end.test->accuracy, end.last_epoch_test_acc);
  EXPECT_GT(end.wall_seconds, 0.0);
  EXPECT_TRUE(fs::exists(dir.path() / "run" / train::kReportFile));
}
