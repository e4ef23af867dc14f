// A model the caller built itself, handed to the run's plan (PlanInputs::model, the seam ember.fit's
// Python modules go through): trained by the same rules as a zoo model (the same weights for the same
// seed), recorded as "<origin>:<class>", refused with the call that works by whatever would have to
// rebuild it (eval, predict, export, a resume without it), tried against the data's input before
// anything is written, and stopped at a step boundary with a checkpoint when its forward raises.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/nn/models.h"
#include "ember/ops.h"
#include "ember/train/caller_model.h"
#include "ember/train/checkpoint.h"
#include "ember/train/inference.h"
#include "ember/train/run_end.h"
#include "ember/train/run_files.h"
#include "ember/train/run_plan.h"
#include "ember/train/settings.h"
#include "support/compare.h"
#include "support/errors.h"
#include "support/files.h"

using namespace ember;
namespace fs = std::filesystem;

namespace {


// A program's own model: a zoo model inside it, and a forward that raises (as a Python module's
// adapter does) on its `raise_at`-th call, with an op's shape refusal or another error.
class Wrapped : public nn::Module {
 public:
  explicit Wrapped(std::shared_ptr<nn::Module> inner) : nn::Module("Wrapped"), inner_(register_module("net", inner)) {}
  Tensor forward(const Tensor& x) override {
    if (++calls == raise_at) throw train::CallerRaised("division by zero", "ZeroDivisionError", false);
    if (shape_refused) throw train::CallerRaised("matmul: (1, 784) @ (100, 10)", "ShapeError", true);
    return (*inner_)(x);
  }
  int64_t calls = 0, raise_at = -1;
  bool shape_refused = false;

 private:
  std::shared_ptr<nn::Module> inner_;
};

class CallerModel : public ::testing::Test {
 protected:
  void SetUp() override {
    previous_sink = train::set_warning_sink([](const std::string&) {});  // few validation samples, on purpose
    test::write_band_split(dir.path(), "train", 160);
    test::write_band_split(dir.path(), "t10k", 32);
  }
  train::TrainSettings settings(const std::string& run) const {
    train::TrainSettings s;
    s.data_dir = dir.path().string(), s.run_dir = (dir.path() / run).string();
    s.epochs = 1, s.batch_size = 16, s.threads = 1, s.workers = 0, s.seed = 5, s.precision = "fp32";
    s.val_split = 0.25, s.device = "cpu", s.verbose = "0";
    return s;
  }
  // lenet5 as the zoo builds it for the run (its initialiser drawn from a generator of the seed).
  static std::shared_ptr<nn::Module> lenet5(int64_t classes = 10) {
    Generator gen(5);
    return models::create("lenet5", classes, 1, 28, &gen);
  }
  static train::PlanInputs with_model(std::shared_ptr<nn::Module> m, const std::string& cls = "LeNet5") {
    train::PlanInputs in;
    in.model = std::move(m);
    in.model_name = train::caller_model_name("c++", cls);
    return in;
  }
  fs::path final_weights(const std::string& run, const std::string& which = "latest.json") const {
    return train::load_checkpoint(dir.path() / run / "checkpoints" / which).weights_path;
  }
  void TearDown() override { train::set_warning_sink(std::move(previous_sink)); }
  test::TempDir dir{"caller_model"};
  train::WarningSink previous_sink;
};

}  // namespace

TEST(CallerModelNames, OriginAndClassAreCheckedAndRecognised) {
  EXPECT_EQ(train::caller_model_name("python", "Net"), "python:Net");
  EXPECT_EQ(train::caller_model_class("python:Net"), "Net");
  EXPECT_TRUE(train::is_caller_model("c++:My_Net2"));
  for (const char* not_one :
       {"lenet5", "net.toml", "python:", "python:my net", "Python:Net", "C:/nets/a.toml", "resnet:small"})
    EXPECT_FALSE(train::is_caller_model(not_one)) << not_one;
  test::expect_error<ValueError>([] { train::caller_model_name("python", "test.<locals>.Net"); }, "an identifier");
  test::expect_error<ValueError>([] { train::caller_model_name("java", "Net"); }, "\"python\" or \"c++\"");
  // A run's record passes the model setting's check (a resume adopts it); building it is the plan's to refuse.
  EXPECT_EQ(train::check_setting_text(train::setting("model"), "python:Net"), "");
  EXPECT_NE(train::check_setting_text(train::setting("model"), "pyton"), "");
  EXPECT_EQ(train::resume_call("runs/a", train::FrontEnd::Cli, "python:Net"), "ember.fit(model=Net(), resume=\"runs/a\")");
}

TEST_F(CallerModel, TrainsAsTheSameZooModelDoesAndIsRecordedByItsClass) {
  train::TrainSettings zoo = settings("zoo");
  zoo.model = "lenet5";
  const train::RunOutcome a = train::run_to_end(*train::plan_run(zoo, {}), {});
  ASSERT_EQ(a.ending, train::RunEnding::Finished) << a.message;

  const std::shared_ptr<nn::Module> mine = lenet5();
  const Tensor first = mine->parameters()[0];
  const Tensor before = first.clone();
  const auto plan = train::plan_run(settings("mine"), with_model(mine));
  EXPECT_EQ(plan->model.get(), mine.get());  // the caller's object itself, not a copy
  const train::RunOutcome b = train::run_to_end(*plan, {});
  ASSERT_EQ(b.ending, train::RunEnding::Finished) << b.message;
  // The same rules: the same weights, bit for bit, and the same final evaluation.
  const train::Checkpoint za = train::load_checkpoint(dir.path() / "zoo" / "checkpoints" / "latest.json");
  const train::Checkpoint mb = train::load_checkpoint(dir.path() / "mine" / "checkpoints" / "latest.json");
  ASSERT_EQ(za.tensors.size(), mb.tensors.size());
  for (size_t i = 0; i < za.tensors.size(); ++i) {
    EXPECT_EQ(za.tensors[i].first, mb.tensors[i].first);
    EXPECT_TRUE(test::close(za.tensors[i].second, mb.tensors[i].second, 0.0, true)) << za.tensors[i].first;
  }
  EXPECT_EQ(a.test->accuracy, b.test->accuracy);
  // Trained in place: the caller's tensors hold the selected (best) epoch's weights.
  EXPECT_FALSE(test::close(before, first));
  const train::Checkpoint best = train::load_checkpoint(dir.path() / "mine" / "checkpoints" / "best.json");
  std::string names;
  for (const auto& [name, t] : best.tensors) {
    names += name + " ";
    if (name == "model/conv1.weight") EXPECT_TRUE(test::close(t, first.cpu()));
  }
  EXPECT_TRUE(test::contains(names, "model/conv1.weight ")) << names;
  // Recorded by its class: config.json, the manifest, the run's report.
  const nlohmann::json cfg = nlohmann::json::parse(std::ifstream(dir.path() / "mine" / train::kConfigFile));
  EXPECT_EQ(cfg["model"], "c++:LeNet5");
  EXPECT_EQ(mb.manifest.model, "c++:LeNet5");
  EXPECT_TRUE(fs::exists(dir.path() / "mine" / train::kReportFile));
}

TEST_F(CallerModel, AResumeNeedsTheModelAgainAndNothingRebuildsIt) {
  ASSERT_EQ(train::run_to_end(*train::plan_run(settings("run"), with_model(lenet5())), {}).ending,
            train::RunEnding::Finished);
  const std::string run = (dir.path() / "run").string();
  train::TrainSettings more;
  more.epochs = 2, more.verbose = "0";
  train::PlanInputs resume;
  resume.resume = run;
  resume.given = [](const train::Setting& s) { return s.key == "epochs"; };
  // Without it: refused, naming the class and the call that works (exit 2 in the CLI: a SettingError).
  const std::string why = test::expect_error<train::SettingError>([&] { train::plan_run(more, resume); },
                                                                   "class LeNet5, recorded as c++:LeNet5");
  EXPECT_TRUE(test::contains(why, "`ember train --resume` cannot rebuild it")) << why;
  // eval, predict, export open the run the same way: refused the same way.
  train::InferenceOptions io;
  io.path = run, io.device = "cpu";
  test::expect_error<train::SettingError>([&] { train::open_for_inference(io, true); },
                                          "`ember eval`, `predict` or `export` cannot rebuild it");
  // A model whose state does not fit the checkpoint: the checkpoint's error, before anything is written.
  train::PlanInputs other = resume;
  other.model = std::make_shared<Wrapped>(lenet5()), other.model_name = "c++:LeNet5";  // "net.conv1.weight", ...
  other.given = resume.given;
  test::expect_error<FormatError>([&] { train::run_to_end(*train::plan_run(more, other), {}); }, "does not fit");
  // With a new instance of the class: continues to its second epoch.
  train::PlanInputs again = resume;
  again.model = lenet5(), again.model_name = "c++:LeNet5";
  const train::RunOutcome end = train::run_to_end(*train::plan_run(more, again), {});
  ASSERT_EQ(end.ending, train::RunEnding::Finished) << end.message;
  EXPECT_EQ(end.fit.epoch, 2);
  // Its weights as --init-from of a run that names no model: the model they record, refused the same way.
  train::TrainSettings init = settings("init");
  init.init_from = run;
  test::expect_error<train::SettingError>([&] { train::plan_run(init, {}); },
                                          "model c++:LeNet5 (what --init-from " + run + "'s weights record) was "
                                          "defined by the program that trained it");
  // A zoo run resumes without one; given one, it is refused.
  train::TrainSettings zoo = settings("zoo");
  zoo.model = "lenet5";
  train::run_to_end(*train::plan_run(zoo, {}), {});
  train::PlanInputs zoo_resume = again;
  zoo_resume.resume = (dir.path() / "zoo").string();
  test::expect_error<train::SettingError>([&] { train::plan_run(more, zoo_resume); }, "resumes without a model object");
}

TEST_F(CallerModel, AModelThatDoesNotTakeTheDataIsAShapeErrorBeforeAnythingIsWritten) {
  auto refusing = std::make_shared<Wrapped>(lenet5());
  refusing->shape_refused = true;
  const std::string m = test::expect_error<ShapeError>(
      [&] { train::plan_run(settings("a"), with_model(refusing, "Wrapped")); },
      "Wrapped does not take fashion-mnist's images as a float32 (N, C, H, W) batch, (N, 1, 28, 28), for 10 classes: "
      "its forward raised ShapeError: matmul");
  // Five logits for ten classes.
  test::expect_error<ShapeError>([&] { train::plan_run(settings("b"), with_model(lenet5(5))); },
                                 "LeNet5 gives [1, 5] for one image, not (1, 10)");
  // Another error of the model's is its own: raised as it was.
  auto raising = std::make_shared<Wrapped>(lenet5());
  raising->raise_at = 1;
  test::expect_error<train::CallerRaised>([&] { train::plan_run(settings("c"), with_model(raising, "Wrapped")); },
                                          "division by zero");
  EXPECT_FALSE(fs::exists(dir.path() / "a") || fs::exists(dir.path() / "b") || fs::exists(dir.path() / "c"));
  // A `model` setting that names a caller's model, with no model given: nothing can build it.
  train::TrainSettings named = settings("d");
  named.model = "python:Net";
  test::expect_error<train::SettingError>([&] { train::plan_run(named, {}); },
                                          "model python:Net was defined in Python: `ember train` builds zoo models");
}

TEST_F(CallerModel, AForwardThatRaisesStopsAtTheStepBoundaryWithACheckpoint) {
  auto model = std::make_shared<Wrapped>(lenet5());
  model->raise_at = 1 /* the plan's try */ + 1 /* summary */ + 4;  // the fourth training step's forward
  train::TrainSettings s = settings("run");
  s.epochs = 2;
  const train::RunOutcome end = train::run_to_end(*train::plan_run(s, with_model(model, "Wrapped")), {});
  ASSERT_EQ(end.ending, train::RunEnding::Interrupted);
  EXPECT_EQ(end.fit.step, 3);  // the fourth step was dropped
  EXPECT_TRUE(test::contains(end.fit.message, "the model raised ZeroDivisionError in step 4 (epoch 1)"))
      << end.fit.message;
  const train::Checkpoint ck = train::load_checkpoint(dir.path() / "run" / "checkpoints" / "latest.json");
  EXPECT_EQ(ck.manifest.step, 3);
  EXPECT_EQ(end.hint, "train::plan_run with resume \"" + (dir.path() / "run").string() +
                          "\" and the program's own Wrapped (train::PlanInputs::model)");
  for (const Tensor& p : model->parameters()) EXPECT_FALSE(p.grad().defined());  // the dropped step's gradients
}

namespace {
class TwoRanks : public train::RunWorld {
 public:
  int size() const override { return 2; }
};
}  // namespace

TEST_F(CallerModel, DataParallelRunsAreRefused) {
  TwoRanks world;
  train::PlanInputs in = with_model(lenet5());
  in.world = &world;
  test::expect_error<train::SettingError>([&] { train::plan_run(settings("run"), in); },
                                          "trains in one process; this run has 2 ranks");
}
