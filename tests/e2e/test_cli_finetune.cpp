// Transfer learning from the command line (issue 26): a model trained on three classes of images is
// fine-tuned on two — the classifier is replaced (said so), --freeze-backbone trains it alone (the
// backbone's weights and batch-norm statistics stay the file's to the bit), --unfreeze-after 1 then
// trains everything, --lr-backbone gives the backbone its own learning rate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "support/test_data.h"
#include "cli_test_util.h"
#include "ember/ember.h"
#include "ember/train/checkpoint.h"

namespace fs = std::filesystem;
using ember::e2e::run_ember;
using ember::e2e::write_shape_images;

namespace {

class CliFineTune : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() / ("ember_e2e_finetune_" + std::to_string(getpid()) + "_" +
                                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
};

// The model's tensors of a run's last checkpoint, without the "model/" prefix.
std::map<std::string, ember::Tensor> weights_of(const fs::path& run) {
  const ember::train::Checkpoint ck = ember::train::load_checkpoint(run / "checkpoints" / "latest.json");
  std::map<std::string, ember::Tensor> out;
  for (const auto& [k, t] : ck.tensors)
    if (k.starts_with("model/")) out[k.substr(6)] = t;
  return out;
}

// The first group of the first match of `re` in `text`, "" when none.
std::string first_group(const std::string& text, const std::string& re) {
  std::smatch m;
  return std::regex_search(text, m, std::regex(re)) && m.size() > 1 ? m[1].str() : std::string();
}

}  // namespace

TEST_F(CliFineTune, ANewHeadTrainsAloneThenEverything) {
  write_shape_images(dir / "three", 24, 0);
  write_shape_images(dir / "two", 24, 50);
  fs::remove_all(dir / "two" / "stripes");
  const std::string common = " --model bncnn --batch-size 16 --threads 2 --val-split 0 --hflip 0";
  auto r = run_ember("train --data " + (dir / "three").string() + common + " --epochs 1 --run-dir " +
                     (dir / "pre").string());
  ASSERT_EQ(r.code, 0) << r.out;
  const auto pre = weights_of(dir / "pre");

  // Frozen: only the new classifier trains.
  r = run_ember("train --data " + (dir / "two").string() + common + " --epochs 2 --init-from " +
                (dir / "pre").string() + " --freeze-backbone --run-dir " + (dir / "frozen").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "the classifier 'fc' differs in shape from the file's (another number of classes): replaced");
  EMBER_EXPECT_HAS(r.out, "fine-tune  backbone frozen (");
  EMBER_EXPECT_HAS(r.out, "training the classifier 'fc' (");
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  {
    // Issue 48, item 15: the summary's trainable count is the classifier's, as the fine-tune line says.
    const std::string head = first_group(r.out, R"(training the classifier 'fc' \(([0-9,]+) parameters\))");
    ASSERT_FALSE(head.empty()) << r.out;
    EXPECT_EQ(first_group(r.out, R"(Trainable params: ([0-9,]+))"), head) << r.out;
  }
  const auto frozen = weights_of(dir / "frozen");
  ASSERT_EQ(frozen.size(), pre.size());
  for (const auto& [k, t] : frozen) {
    if (k.starts_with("fc.")) {
      EXPECT_EQ(t.size(0), 2) << k;
      continue;
    }
    EXPECT_TRUE(ember::allclose(t, pre.at(k), 0, 0)) << k << " changed under --freeze-backbone";
  }

  // Frozen for one epoch, then all of it, the backbone at a tenth of the lr.
  r = run_ember("train --data " + (dir / "two").string() + common + " --epochs 2 --init-from " +
                (dir / "pre").string() + " --freeze-backbone --unfreeze-after 1 --lr-backbone 1e-4 --run-dir " +
                (dir / "thawed").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "for 1 epoch, then all");
  EMBER_EXPECT_HAS(r.out, "backbone lr 0.0001, classifier 'fc' lr");
  EMBER_EXPECT_HAS(r.out, "unfreeze   epoch 2: the whole model trains now");
  const auto thawed = weights_of(dir / "thawed");
  EXPECT_FALSE(ember::allclose(thawed.at("conv1.weight"), pre.at("conv1.weight"), 0, 0));
  EXPECT_FALSE(ember::allclose(thawed.at("bn1.running_mean"), pre.at("bn1.running_mean"), 0, 0));

  // The settings are the run's own: a resume keeps them (and the unfrozen state past epoch 1).
  r = run_ember("train --resume " + (dir / "thawed").string() + " --epochs 3");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("backbone frozen"), std::string::npos) << r.out;
  EMBER_EXPECT_HAS(r.out, "fine-tune  the whole model trains (its backbone was frozen for 1 epoch)");
  EXPECT_EQ(r.out.find("unfreeze   epoch"), std::string::npos) << r.out;

  // Misuse is named.
  r = run_ember("train --data " + (dir / "two").string() + common + " --unfreeze-after 2 --run-dir " +
                (dir / "bad").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "--unfreeze-after 2 needs --freeze-backbone");
}

// The issue's route: a file torch.save wrote (tests/fixtures/pth/bncnn_rgb24_3classes.pth, torch
// 1.13: ember's bncnn names, 3 classes) fine-tuned on two classes with a frozen backbone — the
// weights and batch-norm statistics of every frozen layer stay the file's, bit for bit.
TEST_F(CliFineTune, ATorchSavedFileFineTunesWithItsBackboneKept) {
  write_shape_images(dir / "two", 24, 0);
  fs::remove_all(dir / "two" / "stripes");
  const fs::path pth = fs::path(ember::test::data_dir()) / "fixtures" / "pth" / "bncnn_rgb24_3classes.pth";
  auto r = run_ember("train --data " + (dir / "two").string() + " --model bncnn --batch-size 16 --threads 2 --epochs 2 "
                     "--val-split 0 --init-from " + pth.string() + " --freeze-backbone --run-dir " + (dir / "ft").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "PyTorch torch.save zip archive");
  EMBER_EXPECT_HAS(r.out, "the classifier 'fc' differs in shape from the file's (another number of classes): replaced");
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  const ember::train::Checkpoint file = ember::train::load_checkpoint(pth);
  const auto tuned = weights_of(dir / "ft");
  int kept = 0;
  for (const auto& [k, t] : file.tensors) {
    if (k.starts_with("fc.")) continue;
    ASSERT_TRUE(tuned.count(k)) << k;
    EXPECT_TRUE(ember::allclose(tuned.at(k).to(ember::DType::Float64), t.to(ember::DType::Float64), 0, 0))
        << k << " changed under --freeze-backbone";
    ++kept;
  }
  EXPECT_EQ(kept, 12);  // conv1 and conv2, each batch norm's weight, bias, statistics and batch counter
  EXPECT_EQ(tuned.at("fc.weight").size(0), 2);
}

// A torchvision architecture on a folder of photos: the photo pipeline (decoded per sample,
// RandomResizedCrop + flip for training, resize + centre crop for evaluation, ImageNet mean/std),
// recorded in the run so eval and predict see the evaluation transforms.
TEST_F(CliFineTune, ATorchvisionModelReadsThePhotosThroughThePhotoPipeline) {
  write_shape_images(dir / "shapes", 16, 0);
  auto r = run_ember("train --data " + (dir / "shapes").string() +
                     " --model mobilenet_v3_small --image-size 48 --batch-size 16 --threads 2 --epochs 1 --val-split 0 "
                     "--run-dir " + (dir / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "48x48 RGB crops (--image-size), decoded per sample");
  EMBER_EXPECT_HAS(r.out, "training:   RandomResizedCrop(48, scale 0.08-1) + horizontal flip");
  EMBER_EXPECT_HAS(r.out, "evaluation: resize 54, centre crop 48");
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  r = run_ember("eval " + (dir / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  r = run_ember("predict " + (dir / "run").string() + " " + (dir / "shapes" / "disc" / "img1.png").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "resized to 54 and centre-cropped to 48x48");
  // --augment light and none are recorded; a bad one is named.
  r = run_ember("train --data " + (dir / "shapes").string() +
                " --model lenet5 --augment none --image-size 32 --batch-size 16 --threads 2 --epochs 1 --val-split 0 "
                "--run-dir " + (dir / "small").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "training:   resize 36, centre crop 32");
  r = run_ember("train --data " + (dir / "shapes").string() + " --augment heavy --run-dir " + (dir / "bad").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "--augment");
  // TrivialAugmentWide and ColorJitter on top of the standard recipe; a bad jitter is refused with its form.
  r = run_ember("train --data " + (dir / "shapes").string() +
                " --model lenet5 --augment trivial --color-jitter 0.4,0.4,0.4,0.1 --image-size 32 --batch-size 16 "
                "--threads 2 --epochs 1 --val-split 0 --run-dir " + (dir / "strong").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "+ ColorJitter(0.4, 0.4, 0.4, 0.1) + TrivialAugmentWide");
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  r = run_ember("train --data " + (dir / "shapes").string() + " --model lenet5 --color-jitter 0.4,0.7 --run-dir " +
                (dir / "bad").string());
  EXPECT_EQ(r.code, 2) << r.out;
  EMBER_EXPECT_HAS(r.out, "--color-jitter");
  EMBER_EXPECT_HAS(r.out, "B,C,S,H");
}

// `ember data cache` writes a folder as one file; `ember train --data FILE` trains on it through the
// photo pipeline, and eval finds the run's test split in it again.
TEST_F(CliFineTune, APhotoCacheFileTrainsLikeItsFolder) {
  write_shape_images(dir / "shapes", 16, 0);
  const std::string cache = (dir / "shapes.ember").string();
  auto r = run_ember("data cache " + (dir / "shapes").string() + " -o " + cache + " --max-side 32");
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "48 pictures (48 written now), 0 skipped");
  r = run_ember("train --data " + cache + " --model lenet5 --image-size 28 --batch-size 16 --threads 2 --epochs 1 "
                "--val-split 0 --run-dir " + (dir / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "one photo cache file (48 pictures, longer side <= 32)");
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  r = run_ember("eval " + (dir / "run").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "test accuracy");
  // A damaged cache is named, with how to rebuild it.
  {
    std::fstream f(cache, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(200);
    f.put('\x55');
  }
  r = run_ember("train --data " + cache + " --model lenet5 --epochs 1 --run-dir " + (dir / "bad").string());
  EXPECT_NE(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "the checksum does not match");
  EMBER_EXPECT_HAS(r.out, "ember data cache");
}

namespace {
// The banner's "data" line, e.g. "data       image-folder: 38 train, 10 test, 3x24x24, 3 classes".
std::string data_line(const std::string& out) {
  const size_t at = out.find("data       image-folder:");
  return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
}
}  // namespace

// Issue 48, item 5: the cache of a folder trains with the folder's defaults — ember's small models
// get the same pre-resized size, channels and flips (not torchvision's crops at 28x28), a grey
// folder's cache trains grey, and the banner says "default" for a default size.
TEST_F(CliFineTune, APhotoCacheTakesItsFoldersDefaults) {
  write_shape_images(dir / "shapes", 16, 0);
  const std::string cache = (dir / "shapes.ember").string();
  ASSERT_EQ(run_ember("data cache " + (dir / "shapes").string() + " -o " + cache).code, 0);
  const std::string common = " --model bncnn --batch-size 16 --threads 2 --epochs 1 --val-split 0 --run-dir ";
  auto folder = run_ember("train --data " + (dir / "shapes").string() + common + (dir / "f").string());
  ASSERT_EQ(folder.code, 0) << folder.out;
  auto cached = run_ember("train --data " + cache + common + (dir / "c").string());
  ASSERT_EQ(cached.code, 0) << cached.out;
  EXPECT_EQ(data_line(cached.out), data_line(folder.out)) << cached.out;
  EMBER_EXPECT_HAS(data_line(cached.out), "3x24x24");
  for (const auto* out : {&folder.out, &cached.out}) {
    EMBER_EXPECT_HAS(*out, "uint8 data held once");
    EMBER_EXPECT_HAS(*out, "horizontal flip p 0.5");
    EXPECT_EQ(out->find("RandomResizedCrop"), std::string::npos) << *out;
  }
  auto r = run_ember("eval " + (dir / "c").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "test accuracy");

  // A grey folder's cache holds RGB pictures but remembers their source was grey: 1 channel, as the folder.
  for (const char* cls : {"dark", "light"}) {
    fs::create_directories(dir / "grey" / cls);
    for (int i = 0; i < 8; ++i) {
      std::vector<unsigned char> px(24 * 24, (unsigned char)(cls[0] == 'd' ? 30 + i : 200 + i));
      ASSERT_NE(stbi_write_png((dir / "grey" / cls / ("g" + std::to_string(i) + ".png")).c_str(), 24, 24, 1, px.data(), 24), 0);
    }
  }
  ASSERT_EQ(run_ember("data cache " + (dir / "grey").string() + " -o " + (dir / "grey.ember").string()).code, 0);
  folder = run_ember("train --data " + (dir / "grey").string() + common + (dir / "gf").string());
  cached = run_ember("train --data " + (dir / "grey.ember").string() + common + (dir / "gc").string());
  ASSERT_EQ(cached.code, 0) << cached.out;
  EMBER_EXPECT_HAS(data_line(cached.out), "1x24x24");
  EXPECT_EQ(data_line(cached.out), data_line(folder.out)) << cached.out;

  // torchvision's models: photos at the model's size, said to be the default.
  r = run_ember("train --data " + cache + " --model mobilenet_v3_small --batch-size 16 --threads 2 --epochs 1 "
                "--limit-train 12 --limit-test 6 --val-split 0 --run-dir " + (dir / "tv").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EMBER_EXPECT_HAS(r.out, "224x224 RGB crops (default: the model's size), decoded per sample");
}
