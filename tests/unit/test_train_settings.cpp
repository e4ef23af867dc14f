// The settings table (ember/train/settings.h) without the CLI: defaults, ranges and their messages,
// config.json round trips, resumed manifests (the values that used to crash a resume: batch_size 0
// SIGFPE, threads 100000 SIGSEGV, wrong types as JSON exceptions), TOML config files with [train]
// tables, and the optimizer/schedule registries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <set>

#include "ember/nn/models.h"
#include "ember/ops.h"
#include "ember/optim/registry.h"
#include "ember/train/dataset.h"
#include "ember/train/settings.h"
#include "ember/train/validation.h"

namespace fs = std::filesystem;
using namespace ember;
using train::Setting;
using train::SettingError;
using train::TrainSettings;

namespace {

bool nothing_given(const Setting&) { return false; }

// The message of the SettingError `f` throws ("" when it throws none).
template <class F>
std::string setting_error(F&& f) {
  try {
    f();
  } catch (const SettingError& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_HAS(text, piece) EXPECT_NE(std::string(text).find(piece), std::string::npos) << (text)
#define EXPECT_LACKS(text, piece) EXPECT_EQ(std::string(text).find(piece), std::string::npos) << (text)

// A manifest's config as `ember train` writes it, with `patch` merged in.
std::string run_config(const nlohmann::json& patch = nlohmann::json::object()) {
  nlohmann::json j = nlohmann::json::parse(train::settings_to_json(TrainSettings{}));
  j.merge_patch(patch);
  return j.dump();
}

class SettingsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_settings_" + std::to_string(::getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path write(const std::string& text) {
    const fs::path p = dir / "cfg.toml";
    std::ofstream(p) << text;
    return p;
  }
  fs::path dir;
};

}  // namespace

TEST(TrainSettings, EveryRowIsDeclaredOnceWithAFlagAndHelp) {
  std::set<std::string> keys, names;
  for (const Setting& s : train::train_settings()) {
    EXPECT_TRUE(keys.insert(s.key).second) << s.key << " twice";
    EXPECT_FALSE(s.help.empty()) << s.key;
    ASSERT_FALSE(s.long_names().empty()) << s.key;
    for (const auto& n : s.long_names()) EXPECT_TRUE(names.insert(n).second) << n << " names two settings";
    EXPECT_EQ(train::find_setting(s.key), &s);
    EXPECT_EQ(train::find_setting(s.flag()), &s);
    // The default passes the setting's own check (0 means "from the data" for the folder sizes).
    if (s.key != "image_size" && s.key != "channels")
      EXPECT_EQ(train::check_setting_text(s, train::default_text(s)), "") << s.key;
  }
  EXPECT_EQ(train::find_setting("batch_size")->flag(), "--batch-size");
  EXPECT_EQ(train::find_setting("learning-rate")->key, "lr");
  EXPECT_EQ(train::find_setting("--max-epochs")->key, "epochs");
  EXPECT_EQ(train::find_setting("early-stop")->key, "early_stop_patience");
  EXPECT_EQ(train::find_setting("nope"), nullptr);
  // The names other tools use where they mean the same (issue 22).
  EXPECT_EQ(train::find_setting("--patience")->key, "early_stop_patience");
  EXPECT_EQ(train::find_setting("--wd")->key, "weight_decay");
  EXPECT_EQ(train::find_setting("--bs")->key, "batch_size");
  EXPECT_EQ(train::find_setting("--dataset")->key, "data");
  EXPECT_EQ(train::find_setting("--output-dir")->key, "run_dir");
  EXPECT_EQ(train::find_setting("--weights")->key, "init_from");
  EXPECT_EQ(train::find_setting("wd")->flag(), "--weight-decay");  // messages use the first name
}

// --momentum (issue 22: SGD's 0.9 was fixed): a row like the others, resumable (identity, 0.9 for
// runs from before it), checked, and read by the SGD entry of the registry.
TEST(TrainSettings, MomentumIsASettingSgdReads) {
  const Setting& m = train::setting("momentum");
  EXPECT_EQ(m.resume, train::ResumeRule::Identity);
  EXPECT_EQ(m.absent, "0.9");
  EXPECT_DOUBLE_EQ(TrainSettings{}.momentum, 0.9);
  EXPECT_EQ(train::check_setting_text(m, "0.95"), "");
  EXPECT_EQ(train::check_setting_text(m, "0"), "");
  EXPECT_EQ(train::check_setting_text(m, "1"), "--momentum must be at least 0 and less than 1 (got 1)");
  EXPECT_EQ(train::check_setting_text(m, "-0.5"), "--momentum must be at least 0 and less than 1 (got -0.5)");
  EXPECT_TRUE(optim::find_optimizer("sgd").uses_momentum);
  EXPECT_FALSE(optim::find_optimizer("adamw").uses_momentum);
  // The factory uses it: one step of plain SGD (momentum 0) vs. Nesterov momentum on the same gradient.
  for (double mom : {0.0, 0.9}) {
    Tensor w = zeros({1}).requires_grad_();
    auto sgd = optim::find_optimizer("sgd").make({{.params = {w}}}, {.lr = 1.0, .weight_decay = 0.0, .momentum = mom});
    for (int step = 0; step < 2; ++step) {
      sgd->zero_grad();
      (w * 1.0).sum().backward();  // gradient 1
      sgd->step();
    }
    // plain: -1, -2; Nesterov (buf 1 then 1.9; step g + m*buf): -1.9, then -1.9 - 2.71
    EXPECT_NEAR(w.to_vector<float>()[0], mom == 0 ? -2.0 : -4.61, 1e-5) << mom;
  }
  // Runs from before --momentum adopt 0.9.
  TrainSettings v;
  v.momentum = 0.5;
  nlohmann::json cfg = nlohmann::json::parse(train::settings_to_json(TrainSettings{}));
  cfg.erase("momentum");
  train::adopt_run_settings(v, cfg.dump(), "old/latest.json", [](const Setting&) { return false; });
  EXPECT_DOUBLE_EQ(v.momentum, 0.9);
}

TEST(TrainSettings, DefaultsAreTheRecipe) {
  const TrainSettings d;
  // issue 12's recipe: >= 93% Fashion-MNIST test accuracy (docs/benchmarks.md, "The default recipe")
  EXPECT_EQ(d.model, "bncnn48_fc128");
  EXPECT_EQ(d.optimizer, "adamw");
  EXPECT_EQ(d.schedule, "onecycle");
  EXPECT_EQ(d.batch_size, 64);
  EXPECT_EQ(d.epochs, 12);
  EXPECT_DOUBLE_EQ(d.hflip, 0.5);
  EXPECT_DOUBLE_EQ(d.label_smoothing, 0.1);
  EXPECT_EQ(d.precision, "auto");
  EXPECT_EQ(d.accumulate, 1);
  EXPECT_DOUBLE_EQ(d.val_split, 0.1);
  EXPECT_EQ(d.early_stop_patience, 0);
  EXPECT_FALSE(d.device_resident);
  EXPECT_EQ(train::default_text(train::setting("lr")), "0.006");
  // the zoo knows the default model
  const std::vector<std::string> zoo = models::names();
  EXPECT_NE(std::find(zoo.begin(), zoo.end(), d.model), zoo.end());
}

TEST(TrainSettings, RangesSayWhatIsAllowed) {
  auto check = [](const char* key, const std::string& text) { return train::check_setting_text(train::setting(key), text); };
  EXPECT_EQ(check("batch_size", "0"), "--batch-size must be at least 1 (got 0)");
  EXPECT_EQ(check("accumulate", "0"), "--accumulate must be at least 1 (got 0)");
  EXPECT_EQ(check("accumulate", "4"), "");
  EXPECT_EQ(check("val_split", "1"), "--val-split must be at least 0 and less than 1 (got 1)");
  EXPECT_EQ(check("val_split", "0"), "");
  EXPECT_EQ(check("val_split", "0.999"), "");
  EXPECT_EQ(check("val_split", "-0.1"), "--val-split must be at least 0 and less than 1 (got -0.1)");
  EXPECT_EQ(check("early_stop_patience", "-1"), "--early-stop must be at least 0 (got -1)");
  EXPECT_EQ(check("lr", "nan"), "--lr must be a finite number, greater than 0 (got 'nan')");
  EXPECT_EQ(check("epochs", "2.5"), "--epochs must be a whole number written in digits (got '2.5')");
  EXPECT_EQ(check("seed", "18446744073709551616"), "--seed must be at most 18446744073709551615 (got 18446744073709551616)");
  EXPECT_HAS(check("threads", "100000"), "--threads must be between 0 and 1024 (got 100000)");
  EXPECT_EQ(check("optimizer", "lbfgs"), "--optimizer must be sgd, adam, adamw, adadelta, adagrad or rmsprop (got 'lbfgs')");
  EXPECT_EQ(check("optimizer", "adamm"), "--optimizer must be sgd, adam, adamw, adadelta, adagrad or rmsprop (got 'adamm'); did you mean adam?");
  EXPECT_EQ(check("schedule", "cosine"), "");
  EXPECT_EQ(check("channels", "2"), "--channels must be 1 or 3 (got '2')");
  EXPECT_HAS(check("model", "nope"), "--model: unknown model 'nope'");
  EXPECT_HAS(check("data", "nope"), "--data: unknown dataset 'nope'");
  EXPECT_EQ(train::number_rule_word(train::setting("val_split").rule, false), "in [0, 1)");
  // What 0 means, said by each thread flag's own range message (--workers 0 is in-line).
  EXPECT_HAS(check("workers", "2000"), "0 loads the batches in-line");
  EXPECT_LACKS(check("workers", "2000"), "0 uses all of them");
  EXPECT_HAS(check("threads", "2000"), "0 uses all of them");
  // A zoo name one edit away, or a dataset name, is guessed.
  EXPECT_HAS(check("model", "lenet"), "unknown model 'lenet' (did you mean lenet5?)");
  EXPECT_HAS(check("data", "fashion_mnist"), "(did you mean fashion-mnist?)");
  // A run name is one folder under runs/ (issue 22: "." wrote into runs/, "../x" outside it).
  EXPECT_EQ(check("name", "my-run"), "");
  EXPECT_HAS(check("name", "."), "'.' is not a run name");
  EXPECT_HAS(check("name", ".."), "'..' is not a run name");
  EXPECT_HAS(check("name", "../escape"), "a run name cannot contain '/' (got '../escape')");
  EXPECT_HAS(check("name", "a/b"), "--run-dir PATH");
}

// The optimizer and schedule flags list what the registries hold.
TEST(TrainSettings, OptimizersAndSchedulesComeFromTheRegistries) {
  EXPECT_EQ(optim::optimizer_names(), (std::vector<std::string>{"sgd", "adam", "adamw", "adadelta", "adagrad", "rmsprop"}));
  EXPECT_EQ(optim::schedule_names(), (std::vector<std::string>{"none", "step", "cosine", "onecycle"}));
  EXPECT_TRUE(optim::find_schedule("onecycle").per_step);
  EXPECT_FALSE(optim::find_schedule("cosine").per_step);
  for (const auto& o : optim::optimizers()) EXPECT_HAS(train::setting("optimizer").help, o.name + " (" + o.help + ")");
  EXPECT_THROW(optim::find_optimizer("lbfgs"), ValueError);
  EXPECT_THROW(optim::register_optimizer({"adam", "again", optim::optimizers()[1].make}), ValueError);

  Tensor w = zeros({3}, {.requires_grad = true});
  auto sgd = optim::find_optimizer("sgd").make({{.params = {w}}}, {.lr = 0.5, .weight_decay = 0.0});
  EXPECT_EQ(sgd->name(), "SGD");
  EXPECT_DOUBLE_EQ(sgd->param_groups()[0].lr, 0.5);
  EXPECT_EQ(optim::find_schedule("none").make(*sgd, {}), nullptr);
  auto one = optim::find_schedule("onecycle").make(*sgd, {.lr = 0.5, .epochs = 2, .steps_per_epoch = 3});
  ASSERT_NE(one, nullptr);
  for (int i = 0; i < 6; ++i) one->step();  // the schedule's 2 x 3 steps
  EXPECT_THROW(one->step(), ValueError);

  // A new entry shows up in the flag's allowed values at once.
  optim::register_schedule({"constant-test", "for this test", false, optim::schedules()[0].make});
  EXPECT_EQ(train::check_setting_text(train::setting("schedule"), "constant-test"), "");
}

TEST(TrainSettings, ConfigJsonRoundTrips) {
  TrainSettings v;
  v.batch_size = 64, v.accumulate = 4, v.val_split = 0.25, v.early_stop_patience = 3, v.device_resident = true;
  v.seed = 18446744073709551615ull, v.lr = 0.0123, v.model = "mlp";
  const std::string json = train::settings_to_json(v);
  const nlohmann::json j = nlohmann::json::parse(json);
  EXPECT_EQ(j["accumulate"], 4);
  EXPECT_EQ(j["val_split"], 0.25);
  EXPECT_EQ(j["early_stop_patience"], 3);
  EXPECT_EQ(j["device_resident"], true);
  EXPECT_FALSE(j.contains("log_every"));   // not recorded
  EXPECT_FALSE(j.contains("image_size"));  // recorded under image_folder by the data source
  TrainSettings back;
  EXPECT_TRUE(train::adopt_run_settings(back, json, "m.json", nothing_given).empty());
  EXPECT_EQ(back.batch_size, 64);
  EXPECT_EQ(back.accumulate, 4);
  EXPECT_DOUBLE_EQ(back.val_split, 0.25);
  EXPECT_EQ(back.early_stop_patience, 3);
  EXPECT_EQ(back.seed, 18446744073709551615ull);
  EXPECT_DOUBLE_EQ(back.lr, 0.0123);
  EXPECT_EQ(back.model, "mlp");
  EXPECT_FALSE(back.device_resident);  // this invocation's: not read back
  // The report lists the settings in the table's order, the rest after.
  nlohmann::json with_folder = j;
  with_folder["image_folder"] = {{"image_size", 16}};
  const auto rows = train::config_table(with_folder.dump());
  ASSERT_GE(rows.size(), 3u);
  EXPECT_EQ(rows[0].first, "model");
  EXPECT_EQ(rows.back().first, "image_folder");
}

// The three crashes of issue 11: each value is refused with its flag's message, naming the file.
TEST(TrainSettings, BadManifestValuesAreTheFlagsErrors) {
  TrainSettings v;
  std::string e = setting_error([&] { train::adopt_run_settings(v, run_config({{"batch_size", 0}}), "runs/a/latest.json", nothing_given); });
  EXPECT_HAS(e, "checkpoint manifest 'runs/a/latest.json'");
  EXPECT_HAS(e, "the run's batch_size = 0 is not a valid --batch-size: --batch-size must be at least 1 (got 0)");
  e = setting_error([&] { train::adopt_run_settings(v, run_config({{"threads", 100000}}), "m.json", nothing_given); });
  EXPECT_HAS(e, "--threads must be between 0 and 1024 (got 100000)");
  e = setting_error([&] { train::adopt_run_settings(v, run_config({{"batch_size", "abc"}}), "m.json", nothing_given); });
  EXPECT_HAS(e, "\"config.batch_size\" must be an integer, it is the string \"abc\"");
  EXPECT_EQ(e.find("json.exception"), std::string::npos);
  e = setting_error([&] { train::adopt_run_settings(v, run_config({{"accumulate", 0}}), "m.json", nothing_given); });
  EXPECT_HAS(e, "--accumulate must be at least 1 (got 0)");
  e = setting_error([&] { train::adopt_run_settings(v, run_config({{"val_split", 1.5}}), "m.json", nothing_given); });
  EXPECT_HAS(e, "--val-split must be at least 0 and less than 1 (got 1.5)");
  e = setting_error([&] { train::adopt_run_settings(v, run_config({{"lr", "fast"}}), "m.json", nothing_given); });
  EXPECT_HAS(e, "\"config.lr\" must be a number, it is the string \"fast\"");
  e = setting_error([&] { train::adopt_run_settings(v, run_config({{"seed", -1}}), "m.json", nothing_given); });
  EXPECT_HAS(e, "--seed must be at least 0 (got -1)");
  e = setting_error([&] {
    train::adopt_run_settings(v, run_config({{"image_folder", {{"channels", 2}}}}), "m.json", nothing_given);
  });
  EXPECT_HAS(e, "the run's image_folder.channels = 2 is not a valid --channels");
  // Invocation settings are not read, so their values in a manifest cannot break a resume.
  TrainSettings ok;
  EXPECT_NO_THROW(train::adopt_run_settings(ok, run_config({{"workers", "x"}}), "m.json", nothing_given));
  // No run config at all: the manifest was not written by `ember train` (FormatError, not a value).
  EXPECT_THROW(train::adopt_run_settings(ok, "", "m.json", nothing_given), FormatError);
}

TEST(TrainSettings, ResumeAdoptsIdentityAndLetsExtendSettingsChange) {
  TrainSettings v;
  v.batch_size = 32, v.epochs = 9, v.early_stop_patience = 5;
  auto given = [](const Setting& s) { return s.key == "batch_size" || s.key == "epochs" || s.key == "early_stop_patience"; };
  const auto warnings = train::adopt_run_settings(
      v, run_config({{"batch_size", 64}, {"epochs", 3}, {"early_stop_patience", 2}}), "m.json", given);
  EXPECT_EQ(v.batch_size, 64);  // identity: the checkpoint's
  EXPECT_EQ(v.epochs, 9);       // extend: the flag's
  EXPECT_EQ(v.early_stop_patience, 5);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "--batch-size is ignored with --resume: the run was started with batch_size = 64");
  // A run from before a setting existed: the value it trained with (label smoothing 0, no
  // validation split, no accumulation), not today's default.
  nlohmann::json old = nlohmann::json::parse(run_config());
  for (const char* k : {"label_smoothing", "val_split", "accumulate", "hflip", "crop_padding", "limit_train"}) old.erase(k);
  TrainSettings w;
  train::adopt_run_settings(w, old.dump(), "m.json", nothing_given);
  EXPECT_EQ(w.label_smoothing, 0.0);
  EXPECT_EQ(w.val_split, 0.0);
  EXPECT_EQ(w.accumulate, 1);
  // A setting every run has recorded is required.
  old.erase("batch_size");
  EXPECT_THROW(train::adopt_run_settings(w, old.dump(), "m.json", nothing_given), FormatError);
}

TEST_F(SettingsFile, FlatKeysAndATrainTableWithFlagsWinning) {
  const fs::path f = write(
      "# a run\n"
      "epochs = 3\n"
      "batch-size = 64\n"
      "[train]\n"
      "learning_rate = 0.01\n"
      "model = \"mlp\"\n"
      "val-split = 0.2\n"
      "accumulate = 2\n"
      "device_resident = true\n");
  TrainSettings v;
  v.epochs = 7;  // given on the command line
  auto set = train::apply_settings_file(v, f, [](const Setting& s) { return s.key == "epochs"; });
  EXPECT_EQ(v.epochs, 7);
  EXPECT_EQ(v.batch_size, 64);
  EXPECT_DOUBLE_EQ(v.lr, 0.01);
  EXPECT_EQ(v.model, "mlp");
  EXPECT_DOUBLE_EQ(v.val_split, 0.2);
  EXPECT_EQ(v.accumulate, 2);
  EXPECT_TRUE(v.device_resident);
  EXPECT_EQ(set.size(), 6u);
  // An inline table and dotted keys are the same [train] table.
  TrainSettings w;
  train::apply_settings_file(w, write("train = { epochs = 2, optimizer = \"sgd\" }\n"), nothing_given);
  EXPECT_EQ(w.epochs, 2);
  EXPECT_EQ(w.optimizer, "sgd");
  train::apply_settings_file(w, write("train.seed = 5\ntrain.hflip = 0.5\n"), nothing_given);
  EXPECT_EQ(w.seed, 5u);
  EXPECT_DOUBLE_EQ(w.hflip, 0.5);
}

TEST_F(SettingsFile, MistakesNameTheFileLineKeyAndType) {
  TrainSettings v;
  auto error = [&](const std::string& text) {
    const fs::path f = write(text);
    return setting_error([&] { train::apply_settings_file(v, f, nothing_given); });
  };
  const std::string where = "config file '" + (dir / "cfg.toml").string() + "', line ";
  std::string e = error("epochs = 2\nbath_size = 3\n");
  EXPECT_HAS(e, where + "2: unknown setting \"bath_size\"; did you mean batch_size?");
  e = error("[train]\nepochs = \"3\"\n");
  EXPECT_HAS(e, where + "2: \"train.epochs\" must be an integer, it is the string \"3\"");
  e = error("[train]\nlr = [0.1, 0.2]\n");
  EXPECT_HAS(e, where + "2: \"train.lr\" must be a number, it is an array");
  e = error("model = { name = \"mlp\" }\n");
  EXPECT_HAS(e, where + "1: \"model\" must be a string, it is a table");
  e = error("epochs = 3.0\n");
  EXPECT_HAS(e, "\"epochs\" must be an integer, it is the number 3");
  e = error("\n\nepochs = 0\n");
  EXPECT_HAS(e, where + "3: epochs = 0: --epochs must be at least 1 (got 0)");
  e = error("lr = nan\n");
  EXPECT_HAS(e, "--lr must be a finite number");
  e = error("optimizer = \"lbfgs\"\n");
  EXPECT_HAS(e, "--optimizer must be sgd, adam, adamw, adadelta, adagrad or rmsprop (got 'lbfgs')");
  e = error("[trian]\nepochs = 3\n");
  EXPECT_HAS(e, where + "1: unknown setting \"trian\" (settings go at the top level or in a [train] table); did you mean [train]?");
  e = error("epochs = 2\n[train]\nmax-epochs = 3\n");
  EXPECT_HAS(e, where + "3: \"train.max-epochs\" sets epochs again (line 1 set it as \"epochs\")");
  e = error("epochs = = 3\n");
  EXPECT_HAS(e, where + "1, column");
  EXPECT_HAS(e, "not valid TOML");
  e = error("resume = \"runs/x\"\n");
  EXPECT_HAS(e, "\"resume\" cannot be set in a config file");
  // Nothing is set when one entry is bad.
  TrainSettings w;
  EXPECT_THROW(train::apply_settings_file(w, write("epochs = 5\nlr = -1\n"), nothing_given), SettingError);
  EXPECT_EQ(w.epochs, TrainSettings{}.epochs);
  EXPECT_THROW(train::apply_settings_file(w, dir / "missing.toml", nothing_given), IOError);
}

// --val-split: per class, seeded, the same split for the same seed, disjoint and complete.
TEST(TrainSettings, ValidationSplitIsSeededAndPerClass) {
  const int64_t n = 40;
  std::vector<uint8_t> px(size_t(n) * 4);
  std::vector<int64_t> lab(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 4; ++k) px[size_t(i * 4 + k)] = uint8_t(i);
    lab[size_t(i)] = i % 4;
  }
  data::Dataset all = data::dataset_from_tensors(tensor(px, {n, 1, 2, 2}), tensor(lab, {n}));
  auto a = train::validation_split(all, 0.25, 7), b = train::validation_split(all, 0.25, 7);
  auto c = train::validation_split(all, 0.25, 8);
  ASSERT_EQ(a.held_out.size(), 12);  // llround(0.25 x 10) = 3 (halves away from 0) per class of 10
  EXPECT_EQ(a.kept.size() + a.held_out.size(), n);
  EXPECT_EQ(a.held_out.images.to_vector<uint8_t>(), b.held_out.images.to_vector<uint8_t>());
  EXPECT_NE(a.held_out.images.to_vector<uint8_t>(), c.held_out.images.to_vector<uint8_t>());
  std::set<uint8_t> seen;
  for (const auto* d : {&a.kept, &a.held_out}) {
    const auto v = d->images.to_vector<uint8_t>();
    for (size_t i = 0; i < v.size(); i += 4) EXPECT_TRUE(seen.insert(v[i]).second);
  }
  EXPECT_EQ(seen.size(), size_t(n));
  std::vector<int> per_class(4);
  for (int64_t l : a.held_out.labels.to_vector<int64_t>()) ++per_class[size_t(l)];
  EXPECT_EQ(per_class, (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(a.kept.mean, all.mean);
  auto none = train::validation_split(all, 0.0, 7);
  EXPECT_EQ(none.held_out.size(), 0);
  EXPECT_EQ(none.kept.size(), n);
}
