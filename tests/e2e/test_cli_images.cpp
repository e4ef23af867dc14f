// Images, subsets and prediction from what a run stores (issue 22), through the real `ember`:
// the pixel budget (a 20000x20000 PNG refused under 300 MB of peak memory by predict, eval and
// training), seeded stratified --limit-train/--limit-test, predict and eval with the training
// folder gone or from an exported file alone, image folders that make no classifier, a model far
// from its input size, and --checkpoint best|last.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "../support/png_bomb.h"
#include "cli_test_util.h"

namespace fs = std::filesystem;
using ember::e2e::run_ember;
using ember::e2e::shape_image;
using ember::e2e::write_shape_images;

namespace {

struct Measured {
  int code = -1;
  long peak_rss_kb = 0;  // the child's ru_maxrss
  std::string out;
};

// Runs ember with `args` (split on spaces) as a direct child and reads its peak memory from wait4.
Measured run_measured(const std::vector<std::string>& args, const fs::path& log) {
  Measured m;
  const pid_t pid = ::fork();
  if (pid == 0) {
    FILE* f = std::fopen(log.c_str(), "w");
    if (f) ::dup2(::fileno(f), 1), ::dup2(::fileno(f), 2);
    std::vector<char*> argv;
    const std::string bin = ::e2e::ember_bin();
    argv.push_back(const_cast<char*>(bin.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  struct rusage ru {};
  ::wait4(pid, &status, 0, &ru);
  m.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  m.peak_rss_kb = ru.ru_maxrss;
  m.out = ember::e2e::read_text(log.string());
  return m;
}

class CliImages : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_e2e_images_" + std::to_string(getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  // A quick run on a one-level folder of the three shape classes (n images each).
  std::string train_folder(const fs::path& folder, const std::string& run, const std::string& extra = "") {
    return "train --data " + folder.string() + " --model mlp --epochs 1 --batch-size 16 --threads 2 --run-dir " +
           (dir / run).string() + " " + extra;
  }
  fs::path new_image(int k, const std::string& name) {
    auto px = shape_image(k, 7);
    const fs::path f = dir / name;
    EXPECT_NE(stbi_write_png(f.c_str(), 24, 24, 3, px.data(), 24 * 3), 0);
    return f;
  }
};

}  // namespace

TEST_F(CliImages, ABombIsRefusedBeforeDecodingByPredictEvalAndTraining) {
  const fs::path bomb = dir / "bomb.png";
  ASSERT_TRUE(ember::test::write_zero_png(bomb, 20000, 20000));
  write_shape_images(dir / "pics", 6, 0);
  auto r = run_ember(train_folder(dir / "pics", "run"));
  ASSERT_EQ(r.code, 0) << r.out;

  Measured m = run_measured({"predict", (dir / "run").string(), bomb.string()}, dir / "predict.log");
  EXPECT_EQ(m.code, 1) << m.out;
  EMBER_EXPECT_HAS(m.out, bomb.string() + ": the image is 20000x20000 = 400,000,000 pixels");
  EMBER_EXPECT_HAS(m.out, "--max-image-pixels");
  EXPECT_LT(m.peak_rss_kb, 300 * 1024) << "predict decoded the bomb before refusing it";

  // In the training folder: training refuses it, and eval of the run (whose test split it joins).
  fs::copy_file(bomb, dir / "pics" / "disc" / "zz_bomb.png");
  m = run_measured({"train", "--data", (dir / "pics").string(), "--model", "mlp", "--epochs", "1", "--threads", "2",
                    "--run-dir", (dir / "run2").string()},
                   dir / "train.log");
  EXPECT_EQ(m.code, 1) << m.out;
  EMBER_EXPECT_HAS(m.out, "zz_bomb.png: the image is 20000x20000");
  EXPECT_LT(m.peak_rss_kb, 300 * 1024);
  m = run_measured({"eval", (dir / "run").string()}, dir / "eval.log");
  EXPECT_EQ(m.code, 1) << m.out;
  EMBER_EXPECT_HAS(m.out, "zz_bomb.png: the image is 20000x20000");
  EXPECT_LT(m.peak_rss_kb, 300 * 1024);

  // The budget is a flag: a tiny one refuses an ordinary 24x24 image (576 pixels).
  r = run_ember("predict " + (dir / "run").string() + " " + new_image(0, "disc.png").string() + " --max-image-pixels 500");
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "24x24 = 576 pixels, more than the budget of 500");
  r = run_ember("train --data " + (dir / "pics").string() + " --max-image-pixels 500 --epochs 1 --run-dir " +
                (dir / "run3").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "more than the budget of 500");
}

TEST_F(CliImages, LimitsAreSeededStratifiedSubsetsAndOneClassIsRefused) {
  write_shape_images(dir / "pics", 20, 0);  // 60 images, stored class by class
  // The first 9 images in class order would all be discs; a stratified subset has 3 of each class.
  auto r = run_ember(train_folder(dir / "pics", "run", "--limit-train 9 --val-split 0 --limit-test 6"));
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "9 train, 6 test");
  r = run_ember("eval " + (dir / "run").string() + " --json --limit-test 6");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json ev = nlohmann::json::parse(r.out);
  for (const auto& row : ev["confusion"]) {
    int64_t n = 0;
    for (const auto& v : row) n += v.get<int64_t>();
    EXPECT_EQ(n, 2) << "each class should have 2 of the 6 test samples: " << ev["confusion"].dump();
  }
  r = run_ember(train_folder(dir / "pics", "one", "--limit-train 1"));
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "--limit-train 1 leaves 1 of the 3 classes");
  r = run_ember(train_folder(dir / "pics", "one_test", "--limit-test 1"));
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "--limit-test 1 leaves 1 of the 3 classes");
}

TEST_F(CliImages, PredictNeedsOnlyTheRunOrTheWeightsFile) {
  write_shape_images(dir / "pics", 12, 0);
  auto r = run_ember(train_folder(dir / "pics", "run", "--epochs 2"));
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_ember("eval " + (dir / "run").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json before = nlohmann::json::parse(r.out);
  r = run_ember("export " + (dir / "run").string() + " -o " + (dir / "net.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  // The training folder moves away: predict reads nothing of it, from the run or the export alone.
  fs::rename(dir / "pics", dir / "moved");
  const fs::path ring = new_image(1, "ring.png");
  for (const std::string src : {(dir / "run").string(), (dir / "net.safetensors").string()}) {
    r = run_ember("predict " + src + " " + ring.string() + " --top-k 1");
    ASSERT_EQ(r.code, 0) << src << ":\n" << r.out;
    EMBER_EXPECT_HAS(r.out, "1.  1 ring");
    EMBER_EXPECT_HAS(r.out, "(3x24x24 as image-folder:");
  }
  // eval of the exported file: its own metadata says how the run split the folder.
  r = run_ember("eval " + (dir / "net.safetensors").string() + " --data-dir " + (dir / "moved").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const nlohmann::json after = nlohmann::json::parse(r.out);
  EXPECT_EQ(after["samples"], before["samples"]);
  EXPECT_EQ(after["confusion"], before["confusion"]);
  r = run_ember("predict " + (dir / "run").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "predict needs something to classify: image files or --index N");
}

TEST_F(CliImages, FoldersThatMakeNoClassifierAreRefusedAndLeftOutFilesNamed) {
  write_shape_images(dir / "pics", 4, 0);
  fs::create_directories(dir / "pics" / "empty");
  fs::create_directories(dir / "pics" / "notes");
  std::ofstream(dir / "pics" / "notes" / "readme.txt") << "x";
  auto r = run_ember(train_folder(dir / "pics", "run"));
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "2 of its 5 class folders hold no image files (empty, notes)");
  fs::remove_all(dir / "pics" / "empty");
  fs::remove_all(dir / "pics" / "notes");
  // A dangling symlink and a folder inside a class are named, not skipped in silence.
  fs::create_symlink(dir / "nowhere.png", dir / "pics" / "ring" / "gone.png");
  write_shape_images(dir / "pics" / "disc" / "more", 1, 0);
  r = run_ember(train_folder(dir / "pics", "run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "1 dangling symlink: ring/gone.png");
  EMBER_EXPECT_HAS(r.out, "1 folder inside a class folder");
  // One class is not a classifier.
  write_shape_images(dir / "solo_src", 3, 0);
  fs::create_directories(dir / "solo");
  fs::rename(dir / "solo_src" / "disc", dir / "solo" / "disc");
  r = run_ember(train_folder(dir / "solo", "solo_run"));
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "has one class folder ('disc', 3 images)");
  // A validation/ folder is the val split, as val/ is.
  write_shape_images(dir / "split" / "train", 4, 0);
  write_shape_images(dir / "split" / "validation", 2, 10);
  write_shape_images(dir / "split" / "test", 2, 20);
  r = run_ember(train_folder(dir / "split", "split_run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "train/, validation/ and test/ folders");
  EMBER_EXPECT_HAS(r.out, "validation the folder's val/: 6 samples");
}

TEST_F(CliImages, SmallModelsWarnFarAboveTheirSizeAndTooSmallImagesNameTheFlag) {
  write_shape_images(dir / "pics", 3, 0);
  auto r = run_ember(train_folder(dir / "pics", "big", "--model lenet5 --image-size 60"));
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "lenet5 is built for 28x28 images: at 60x60");
  EMBER_EXPECT_HAS(r.out, "--model resnet_small");
  r = run_ember(train_folder(dir / "pics", "small", "--model lenet5 --image-size 8"));
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "lenet5: image_size must be >= 12, got 8");
  EMBER_EXPECT_HAS(r.out, "--image-size N");
}

TEST_F(CliImages, EvalPredictAndExportTakeTheBestCheckpointUnlessToldLast) {
  write_shape_images(dir / "pics", 6, 0);
  const fs::path run = dir / "run", ck = run / "checkpoints";
  auto r = run_ember(train_folder(dir / "pics", "run"));
  ASSERT_EQ(r.code, 0) << r.out;
  // Keep epoch 1 as the best whatever epoch 2 does: its manifest and weights file, put back after.
  const nlohmann::json best = nlohmann::json::parse(ember::e2e::read_text((ck / "best.json").string()));
  const std::string weights = best["weights"];
  fs::copy_file(ck / "best.json", dir / "best.json");
  fs::copy_file(ck / weights, dir / weights);
  r = run_ember("train --resume " + run.string() + " --epochs 2");
  ASSERT_EQ(r.code, 0) << r.out;
  fs::copy_file(dir / "best.json", ck / "best.json", fs::copy_options::overwrite_existing);
  fs::copy_file(dir / weights, ck / weights, fs::copy_options::overwrite_existing);

  r = run_ember("eval " + run.string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["epoch"], 1);
  EXPECT_EQ(j["checkpoint_choice"], "best");
  r = run_ember("eval " + run.string() + " --json --checkpoint last");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["epoch"], 2);
  EXPECT_EQ(j["checkpoint_choice"], "last");
  r = run_ember("eval " + run.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "the best epoch, 1 of 2 (validation accuracy");
  EMBER_EXPECT_HAS(r.out, "--checkpoint last for epoch 2");
  r = run_ember("predict " + run.string() + " " + new_image(2, "s.png").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "checkpoint: the best epoch, 1 of 2");
  r = run_ember("export " + run.string() + " -o " + (dir / "m.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "epoch 1, step");
  r = run_ember("export " + run.string() + " --checkpoint last -o " + (dir / "l.safetensors").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "epoch 2, step");
  r = run_ember("eval " + (ck / "latest.json").string() + " --checkpoint best");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "is one checkpoint file already");
}

namespace {
// Cuts `file` to half its bytes: a JPEG whose header reads fine but whose data ends early.
void truncate_half(const fs::path& file) {
  const std::string bytes = ember::e2e::read_text(file.string());
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size() / 2));
}
size_t count_of(const std::string& text, const std::string& piece) {
  size_t n = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++n;
  return n;
}
}  // namespace

// Issue 48, item 2: one truncated JPEG never ends a run. Its header reads fine at the scan, so the
// photo pipeline of torchvision's models met it in epoch 1 and died; every path now skips it with
// the same warning (once), and only a large share of bad files is refused.
TEST_F(CliImages, OneTruncatedJpegIsSkippedByEveryPathAndOnlyManyAreRefused) {
  write_shape_images(dir / "pics", 12, 0);  // img0, img3, img6, img9 of each class are JPEGs
  const fs::path bad = dir / "pics" / "ring" / "img3.jpg";
  truncate_half(bad);
  const std::string warning = "warning: skipping " + bad.string() + ": cannot decode image";

  auto r = run_ember(train_folder(dir / "pics", "small"));  // ember's small models: decoded once, as tensors
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, warning);

  // torchvision's resnet18: photos decoded per sample, the bad one found in the first epoch.
  r = run_ember("train --data " + (dir / "pics").string() + " --model resnet18 --image-size 32 --epochs 2 "
                "--batch-size 8 --threads 2 --val-split 0 --run-dir " + (dir / "r18").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, warning);
  EXPECT_EQ(count_of(r.out, warning), 1u) << "warned once, then left out of later epochs:\n" << r.out;
  EXPECT_TRUE(fs::exists(dir / "r18" / "checkpoints" / "best.json")) << r.out;
  r = run_ember("eval " + (dir / "r18").string());  // the test split may hold it: skipped there too
  ASSERT_EQ(r.code, 0) << r.out;

  r = run_ember("data cache " + (dir / "pics").string() + " -o " + (dir / "pics.ember").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, warning);
  EMBER_EXPECT_HAS(r.out, "35 pictures (35 written now), 1 skipped");

  // Five of 36 (more than a tenth): the folder is refused, by the scan and by the cache alike.
  for (const char* cls : {"disc", "stripes"})
    for (const char* name : {"img0.jpg", "img6.jpg"}) truncate_half(dir / "pics" / cls / name);
  r = run_ember("train --data " + (dir / "pics").string() + " --model resnet18 --image-size 32 --epochs 1 "
                "--batch-size 8 --threads 2 --run-dir " + (dir / "r18_many").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "of its 36 image files cannot be read or decoded (more than a tenth");  // found so far
  r = run_ember(train_folder(dir / "pics", "small_many"));
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "5 of its 36 image files cannot be read or decoded");
  r = run_ember("data cache " + (dir / "pics").string() + " -o " + (dir / "many.ember").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "5 of its 36 image files cannot be read or decoded");
  EXPECT_FALSE(fs::exists(dir / "many.ember.partial")) << "a rerun must read every file again";
}

// Issue 48, item 6: photo defaults that do not fight themselves. A folder of 70x70 photos is read at
// 64x64; without --model it trains resnet_small (which pools globally) instead of the Fashion-MNIST
// model that warned it was built for 28x28, and torchvision's architectures take their reference
// recipe (SGD, lr scaled to the batch) instead of AdamW at 6e-3, each said in the banner.
TEST_F(CliImages, PhotoDefaultsFitThePhotosAndTheModel) {
  for (int k = 0; k < 3; ++k) {
    fs::create_directories(dir / "photos" / ember::e2e::kShapeClasses[k]);
    for (int i = 0; i < 6; ++i) {
      std::vector<unsigned char> px(70 * 70 * 3);
      for (size_t p = 0; p < px.size(); ++p) px[p] = (unsigned char)((p % 3 == size_t(k) ? 150 : 30) + (p / 3 + i) % 50);
      const fs::path f = dir / "photos" / ember::e2e::kShapeClasses[k] / ("p" + std::to_string(i) + ".png");
      ASSERT_NE(stbi_write_png(f.c_str(), 70, 70, 3, px.data(), 70 * 3), 0);
    }
  }
  auto r = run_ember("train --data " + (dir / "photos").string() + " --epochs 1 --threads 2 --run-dir " +
                     (dir / "default").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "model      resnet_small:");
  EMBER_EXPECT_HAS(r.out, "defaults   --model resnet_small for an image folder");
  EXPECT_EQ(r.out.find("is built for"), std::string::npos) << r.out;
  EMBER_EXPECT_HAS(r.out, "3x64x64");

  r = run_ember("train --data " + (dir / "photos").string() + " --model resnet18 --image-size 32 --batch-size 16 "
                "--epochs 1 --threads 2 --val-split 0 --run-dir " + (dir / "r18").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "optimizer  sgd lr 0.00625, momentum 0.9, weight decay 0.0001");
  EMBER_EXPECT_HAS(r.out, "of resnet18: torchvision's ResNet");
  // Given values are never changed.
  r = run_ember("train --data " + (dir / "photos").string() + " --model resnet18 --image-size 32 --batch-size 16 "
                "--optimizer adamw --lr 0.002 --epochs 1 --threads 2 --val-split 0 --run-dir " + (dir / "given").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "optimizer  adamw lr 0.002, weight decay 0.01");
}

// Issue 48, item 19: a best epoch chosen on a handful of validation samples is warned about.
TEST_F(CliImages, ABestEpochChosenOnFewValidationSamplesIsWarnedAbout) {
  write_shape_images(dir / "pics", 12, 0);  // 36 images: 29 train, of which 10% (3) validate
  auto r = run_ember(train_folder(dir / "pics", "run"));
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "warning: the best epoch is chosen on 3 validation samples (fewer than 50");
  EMBER_EXPECT_HAS(r.out, "hold out more with --val-split (now 0.1)");
  r = run_ember(train_folder(dir / "pics", "run_no_val", "--val-split 0"));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("validation samples (fewer than"), std::string::npos) << r.out;
}

// What predict says when it is given something else than it takes (issue 48, item 18): an image
// where the run goes (the run forgotten: the latest run under runs/ is named), an ONNX graph (it
// runs in onnxruntime), and a folder of images (each classified, sorted, the rest skipped with a note).
TEST_F(CliImages, PredictAnswersAForgottenRunAnOnnxFileAndAFolder) {
  write_shape_images(dir / "pics", 8, 0);
  const std::string in_dir = "cd " + dir.string() + " && ";
  auto r = run_ember(train_folder(dir / "pics", "runs/shapes"));
  ASSERT_EQ(r.code, 0) << r.out;
  const fs::path ring = new_image(1, "ring.png");

  r = run_ember("predict ring.png", in_dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "'ring.png' is an image, not a model: no run given");
  EMBER_EXPECT_HAS(r.out, "`ember predict runs/shapes ring.png` (runs/shapes is the latest run under runs/)");
  fs::create_directories(dir / "elsewhere");
  r = run_ember("predict ../ring.png", "cd " + (dir / "elsewhere").string() + " && ");
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "`ember predict runs/<name> ../ring.png` (no run under runs/ yet");

  r = run_ember("export runs/shapes -o model.onnx", in_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_ember("predict model.onnx ring.png", in_dir);
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "'model.onnx' is an ONNX model: ember predicts with its own runs, checkpoints and "
                          "safetensors exports; an ONNX file runs in onnxruntime");
  EMBER_EXPECT_HAS(r.out, "ort.InferenceSession(\"model.onnx\")");
  EMBER_EXPECT_LACKS(r.out, "model.onnx.safetensors");

  // A folder: its images in name order, one block each; a text file and a sub-folder are skipped.
  fs::create_directories(dir / "batch" / "sub");
  fs::copy_file(ring, dir / "batch" / "b_ring.png");
  new_image(0, "batch/a_first.png");
  new_image(2, "batch/c_last.PNG");
  std::ofstream(dir / "batch" / "notes.txt") << "not an image";
  r = run_ember("predict runs/shapes batch --top-k 1", in_dir);
  ASSERT_EQ(r.code, 0) << r.out;
  const size_t a = r.out.find("batch/a_first.png ("), b = r.out.find("batch/b_ring.png ("),
               c = r.out.find("batch/c_last.PNG (");
  ASSERT_NE(a, std::string::npos) << r.out;
  ASSERT_NE(b, std::string::npos) << r.out;
  ASSERT_NE(c, std::string::npos) << r.out;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EMBER_EXPECT_HAS(r.out, "note: skipping batch/notes.txt: not an image file");
  EMBER_EXPECT_HAS(r.out, "note: skipping batch/sub: a folder");
  fs::create_directories(dir / "nothing");
  r = run_ember("predict runs/shapes nothing", in_dir);
  EXPECT_EQ(r.code, 1) << r.out;
  EMBER_EXPECT_HAS(r.out, "the folder 'nothing' holds no image files");
}
