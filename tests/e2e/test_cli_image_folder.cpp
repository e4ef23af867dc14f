// `ember train --data PATH` on a folder of the user's own images (issue 15 item 18): generated PNG
// and JPEG images of three classes (colour and shape differ), trained through the CLI, then eval
// and predict by class name, from another directory too.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <vector>

#include "cli_test_util.h"

namespace fs = std::filesystem;
using ember::e2e::run_ember;
using ember::e2e::shape_image;
using ember::e2e::write_shape_images;

namespace {

const char* const* kClasses = ember::e2e::kShapeClasses;

class CliImageFolder : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_e2e_folder_" + std::to_string(getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
};

}  // namespace

TEST_F(CliImageFolder, TrainOnTrainAndTestFoldersThenEvalAndPredictByClassName) {
  write_shape_images(dir / "shapes" / "train", 40, 0);
  write_shape_images(dir / "shapes" / "test", 10, 100);
  const std::string run_dir = (dir / "run").string();
  auto r = run_ember("train --data " + (dir / "shapes").string() +
                     " --model lenet5 --epochs 2 --batch-size 16 --threads 2 --run-dir " + run_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "120 train, 30 test, 3x24x24, 3 classes");
  EMBER_EXPECT_HAS(r.out, "train/ and test/ folders\n           size 24x24 and colour as 32 sampled images");  // a line each
  EMBER_EXPECT_HAS(r.out, "classes disc, ring, stripes");
  // The run's config (and so every checkpoint's manifest) carries the folder's settings.
  nlohmann::json cfg = nlohmann::json::parse(ember::e2e::read_text(run_dir + "/config.json"));
  EXPECT_EQ(cfg["data"], "image-folder");
  EXPECT_EQ(cfg["data_dir"], (dir / "shapes").string());
  EXPECT_EQ(cfg["image_folder"]["classes"], (std::vector<std::string>{"disc", "ring", "stripes"}));
  EXPECT_EQ(cfg["image_folder"]["image_size"], 24);
  EXPECT_EQ(cfg["image_folder"]["mean"].size(), 3u);
  nlohmann::json manifest = nlohmann::json::parse(ember::e2e::read_text(run_dir + "/checkpoints/latest.json"));
  EXPECT_NE(manifest.dump().find("stripes"), std::string::npos);
  const std::string html = ember::e2e::read_text(run_dir + "/report.html");
  EMBER_EXPECT_HAS(html, "<th>stripes</th>");

  // eval from another directory: the folder is found through the run's absolute data_dir.
  r = run_ember("eval " + run_dir + " --json", "cd / && ");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json ev = nlohmann::json::parse(r.out);
  EXPECT_EQ(ev["samples"], 30);
  EXPECT_EQ(ev["classes"], (std::vector<std::string>{"disc", "ring", "stripes"}));
  EXPECT_GE(ev["accuracy"].get<double>(), 0.9) << "three colours and shapes should be learnt in 2 epochs";
  r = run_ember("eval " + run_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "stripes");

  // predict: a new image file of each class, named by class.
  for (int k = 0; k < 3; ++k) {
    auto px = shape_image(k, 7);
    const fs::path f = dir / (std::string("new_") + kClasses[k] + ".png");
    ASSERT_NE(stbi_write_png(f.c_str(), 24, 24, 3, px.data(), 24 * 3), 0);
    r = run_ember("predict " + run_dir + " " + f.string() + " --top-k 1");
    ASSERT_EQ(r.code, 0) << r.out;
    EMBER_EXPECT_HAS(r.out, "(3x24x24 as image-folder:");
    EMBER_EXPECT_HAS(r.out, std::string(" ") + kClasses[k] + " ");
  }
  r = run_ember("predict " + run_dir + " --index 0 --top-k 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "(true class 0 disc)");

  // The folder moved: eval says so and takes --data-dir.
  fs::rename(dir / "shapes", dir / "moved");
  r = run_ember("eval " + run_dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "--data-dir");
  r = run_ember("eval " + run_dir + " --data-dir " + (dir / "moved").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], 30);
}

TEST_F(CliImageFolder, OneLevelFolderIsSplitBySeedAndFlagsSetSizeAndChannels) {
  write_shape_images(dir / "pics", 20, 0);
  const std::string run_dir = (dir / "run").string();
  auto r = run_ember("train --data " + (dir / "pics").string() +
                     " --image-size 16 --channels 1 --test-fraction 0.25 --seed 3 --model mlp --epochs 1 "
                     "--batch-size 15 --threads 2 --run-dir " + run_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "45 train, 15 test, 1x16x16, 3 classes");
  EMBER_EXPECT_HAS(r.out, "one folder of classes, seeded split (75/25)");
  r = run_ember("eval " + run_dir + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], 15);  // the same held-out images, found again
  // A run name made from a relative folder path names the folder, not the path.
  r = run_ember("train --data pics --model mlp --epochs 1 --batch-size 15 --threads 2 --limit-train 30",
                "cd " + dir.string() + " && ");
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "runs/mlp-pics-");
  // --data image-folder --data-dir RELATIVE: stored absolute, so eval works from anywhere.
  r = run_ember("train --data image-folder --data-dir pics --model mlp --epochs 1 --batch-size 15 --threads 2 "
                "--limit-train 30 --run-dir rel", "cd " + dir.string() + " && ");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json cfg = nlohmann::json::parse(ember::e2e::read_text((dir / "rel" / "config.json").string()));
  EXPECT_EQ(cfg["data_dir"], (dir / "pics").string());
  r = run_ember("eval " + (dir / "rel").string() + " --json", "cd / && ");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(nlohmann::json::parse(r.out)["samples"], 12);  // 20% of 3 x 20, held out by seed 0
}

TEST_F(CliImageFolder, ValFolderIsEvaluatedEachEpochAndTestAtTheEnd) {
  write_shape_images(dir / "shapes" / "train", 10, 0);
  write_shape_images(dir / "shapes" / "val", 4, 50);
  write_shape_images(dir / "shapes" / "test", 2, 100);
  const std::string run_dir = (dir / "run").string();
  auto r = run_ember("train --data " + (dir / "shapes").string() +
                     " --model mlp --epochs 1 --batch-size 10 --threads 2 --run-dir " + run_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "train/, val/ and test/ folders");
  EMBER_EXPECT_HAS(r.out, "12 val images (evaluated each epoch; test/ at the end)");
  EMBER_EXPECT_HAS(r.out, "validation the folder's val/: 12 samples");
  EMBER_EXPECT_HAS(r.out, "train            val             test");  // the epoch table's column groups
  EMBER_EXPECT_HAS(r.out, "(6 samples;");  // the final evaluation: test/
  const std::string html = ember::e2e::read_text(run_dir + "/report.html");
  EMBER_EXPECT_HAS(html, "<th>val acc</th>");
  EMBER_EXPECT_HAS(html, ">val loss (cross-entropy)</text>");
}

TEST_F(CliImageFolder, BadFoldersAreClearErrors) {
  // A value with a '/' is a path (issue 48, item 7): the missing folder is named, not "unknown dataset".
  auto r = run_ember("train --data " + (dir / "nope").string() + " --epochs 1");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "no such folder '" + (dir / "nope").string() + "'");
  write_shape_images(dir / "half" / "train", 3, 0);
  r = run_ember("train --data " + (dir / "half").string() + " --epochs 1 --run-dir " + (dir / "run").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "train/ but no test/");
  fs::create_directories(dir / "empty" / "a");
  r = run_ember("train --data " + (dir / "empty").string() + " --epochs 1 --run-dir " + (dir / "run2").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "no image files");
}
