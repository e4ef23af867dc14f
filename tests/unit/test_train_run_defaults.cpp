// A new run's defaults that depend on its model and data (issue 48, item 6; ember/train/run_defaults.h):
// the image-folder model, each model's recipe (torchvision's for its architectures, the lr scaled to
// the batch), only where nothing was given, and the warning for an exploding loss that names --lr.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/nn/layers.h"
#include "ember/nn/models.h"
#include "ember/optim/registry.h"
#include "ember/train/loss_watch.h"
#include "ember/train/run_data.h"
#include "ember/train/run_defaults.h"
#include "ember/train/wording.h"

using namespace ember;
using train::Setting;
using train::TrainSettings;

namespace {

#define EXPECT_HAS(text, piece) EXPECT_NE(std::string(text).find(piece), std::string::npos) << (text)

// A GivenFn for the keys in `keys`.
train::GivenFn given_of(std::vector<std::string> keys) {
  return [keys](const Setting& s) { return std::find(keys.begin(), keys.end(), s.key) != keys.end(); };
}

TEST(RunDefaults, AnImageFolderGetsAModelThatTakesAnyImageSize) {
  TrainSettings c;
  c.data = train::kImageFolder;
  EXPECT_HAS(train::apply_model_default(c, given_of({})), "resnet_small for an image folder");
  EXPECT_EQ(c.model, "resnet_small");
  EXPECT_EQ(models::design_size(c.model), 0) << "the folder's default must fit any size (no size warning)";
  c = TrainSettings{};
  c.data = train::kImageFolder, c.model = "lenet5";
  EXPECT_EQ(train::apply_model_default(c, given_of({"model"})), "");
  EXPECT_EQ(c.model, "lenet5");
  c = TrainSettings{};  // a named dataset keeps the general default
  EXPECT_EQ(train::apply_model_default(c, given_of({})), "");
  EXPECT_EQ(c.model, TrainSettings{}.model);
}

TEST(RunDefaults, TorchvisionArchitecturesTakeTheirReferenceRecipeScaledToTheBatch) {
  TrainSettings c;
  c.model = "resnet18";
  const std::string said = train::apply_recipe_defaults(c, given_of({"model"}), 64);
  EXPECT_EQ(c.optimizer, "sgd");
  EXPECT_DOUBLE_EQ(c.lr, 0.1 * 64 / 256);
  EXPECT_DOUBLE_EQ(c.weight_decay, 1e-4);
  EXPECT_HAS(said, "torchvision's ResNet recipe");
  EXPECT_HAS(said, "scaled linearly to batch 64");
  c = TrainSettings{};
  c.model = "alexnet";  // no batch norm: a tenth of the ResNets' lr
  train::apply_recipe_defaults(c, given_of({}), 256);
  EXPECT_DOUBLE_EQ(c.lr, 0.01);
  c = TrainSettings{};
  c.model = "mobilenet_v2";
  train::apply_recipe_defaults(c, given_of({}), 128);
  EXPECT_DOUBLE_EQ(c.lr, 0.045 / 2);
  EXPECT_DOUBLE_EQ(c.weight_decay, 4e-5);
  for (const char* m : {"mobilenet_v3_small", "efficientnet_b0"}) {  // no torchvision recipe ember can follow
    c = TrainSettings{};
    c.model = m;
    EXPECT_HAS(train::apply_recipe_defaults(c, given_of({}), 64), "PyTorch's AdamW defaults");
    EXPECT_EQ(c.optimizer, "adamw");
    EXPECT_DOUBLE_EQ(c.lr, 1e-3);
  }
  // Every recipe names an optimizer the registry has.
  for (const std::string& m : models::names()) EXPECT_NO_THROW(optim::find_optimizer(train::model_recipe(m).optimizer)) << m;
}

TEST(RunDefaults, WhatWasGivenIsKeptAndEmbersModelsKeepTheirRecipe) {
  TrainSettings c;
  c.model = "resnet18", c.lr = 0.05;
  train::apply_recipe_defaults(c, given_of({"lr"}), 64);
  EXPECT_DOUBLE_EQ(c.lr, 0.05);
  EXPECT_EQ(c.optimizer, "sgd");
  // AdamW asked for on a torchvision model: PyTorch's default lr, not the 6e-3 that sent resnet18 to chance.
  c = TrainSettings{};
  c.model = "resnet18", c.optimizer = "adamw";
  EXPECT_HAS(train::apply_recipe_defaults(c, given_of({"optimizer"}), 64), "PyTorch's default for adamw");
  EXPECT_DOUBLE_EQ(c.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.weight_decay, 1e-2);
  // ember's own models: today's recipe, whatever was given, and nothing said.
  for (const char* m : {"bncnn48_fc128", "resnet_small", "lenet5"}) {
    c = TrainSettings{};
    c.model = m, c.optimizer = "sgd";
    EXPECT_EQ(train::apply_recipe_defaults(c, given_of({"optimizer"}), 64), "") << m;
    EXPECT_DOUBLE_EQ(c.lr, TrainSettings{}.lr) << m;
    EXPECT_DOUBLE_EQ(c.weight_decay, TrainSettings{}.weight_decay) << m;
  }
  EXPECT_EQ(train::defaults_banner({"", ""}), "");
  EXPECT_HAS(train::defaults_banner({"a", "b"}), "defaults   a\n           b\n");
}

TEST(LossWatch, WarnsOnceFarAboveTheLossOfGuessingAndNamesLr) {
  std::vector<std::string> said;
  const train::WarningSink before = train::set_warning_sink([&](const std::string& m) { said.push_back(m); });
  train::FitOptions fo;
  train::LossWatch watch(3, 6e-3, "alexnet");
  EXPECT_DOUBLE_EQ(train::LossWatch::threshold(3), 3 * std::log(3.0));
  EXPECT_DOUBLE_EQ(train::LossWatch::threshold(2), 3 * std::log(2.0));
  train::IntervalStats s;
  s.samples = 64, s.last_step = 3;
  s.loss = 1.2;  // about ln(3): learning slowly, not exploding
  // on_sync reads nothing of the context: any one will do.
  nn::Linear lin(2, 3);
  auto opt = optim::find_optimizer("sgd").make({{.params = lin.parameters()}}, {.lr = 0.1});
  train::FitContext ctx(fo, lin, *opt);
  watch.on_sync(ctx, s);
  EXPECT_TRUE(said.empty());
  s.loss = 5622;
  watch.on_sync(ctx, s);
  s.loss = 9000, s.last_step = 9;
  watch.on_sync(ctx, s);
  train::set_warning_sink(before);
  ASSERT_EQ(said.size(), 1u);
  EXPECT_HAS(said[0], "the training loss is 5622 at step 3, far above ln(3) = 1.10");
  EXPECT_HAS(said[0], "try --lr 0.0006");
}

}  // namespace
