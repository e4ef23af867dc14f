// Checkpoints: round trip, the latest/best protocol, and clear errors for corrupt, truncated or
// mismatched files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/train/checkpoint.h"

using namespace ember;
using namespace ember::train;
namespace fs = std::filesystem;

namespace {
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("ember_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
  }
  ~TempDir() { fs::remove_all(path); }
};
CheckpointManifest manifest(int64_t step) {
  CheckpointManifest m;
  m.ember_version = version();
  m.device = "cpu";
  m.model = "mlp";
  m.epoch = 1;
  m.step = step;
  m.batch_in_epoch = 3;
  m.seed = 42;
  m.rng_seed = 42;
  m.rng_offset = 17;
  m.optimizer_scalars = {{"step", double(step)}};
  m.config_json = R"({"lr":0.01})";
  return m;
}
}  // namespace

TEST(TrainCheckpoint, RoundTripIsBitExact) {
  TempDir d;
  Tensor w = randn({4, 3}), b = tensor(std::vector<int64_t>{1, 2, 3});
  save_checkpoint(d.path, "latest", manifest(7), {{"model/w", w}, {"model/b", b}});
  Checkpoint ck = load_checkpoint(d.path);  // a directory finds latest.json
  EXPECT_EQ(ck.manifest.step, 7);
  EXPECT_EQ(ck.manifest.rng_offset, 17u);
  EXPECT_EQ(ck.manifest.config_json, R"({"lr":0.01})");
  ASSERT_NE(ck.find("model/w"), nullptr);
  EXPECT_EQ(ck.find("model/w")->to_vector<float>(), w.to_vector<float>());
  EXPECT_EQ(ck.find("model/b")->to_vector<int64_t>(), b.to_vector<int64_t>());

  Tensor w2 = zeros({4, 3}), b2 = zeros({3}, {.dtype = DType::Int64});
  restore_tensors(ck, "model/", {{"w", w2}, {"b", b2}});
  EXPECT_EQ(w2.to_vector<float>(), w.to_vector<float>());
}

TEST(TrainCheckpoint, OldWeightsArePrunedAndBestIsKept) {
  TempDir d;
  save_checkpoint(d.path, "latest", manifest(1), {{"x", ones({2})}});
  tag_checkpoint(d.path, "latest", "best");
  save_checkpoint(d.path, "latest", manifest(2), {{"x", full({2}, 2.0)}});
  save_checkpoint(d.path, "latest", manifest(3), {{"x", full({2}, 3.0)}});
  EXPECT_TRUE(fs::exists(d.path / "step-000000001.safetensors"));  // best
  EXPECT_FALSE(fs::exists(d.path / "step-000000002.safetensors"));
  EXPECT_TRUE(fs::exists(d.path / "step-000000003.safetensors"));
  EXPECT_EQ(load_checkpoint(d.path / "best.json").find("x")->to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(load_checkpoint(d.path / "latest.json").find("x")->to_vector<float>(), (std::vector<float>{3, 3}));
}

TEST(TrainCheckpoint, TruncatedOrFlippedWeightsAreCaught) {
  TempDir d;
  save_checkpoint(d.path, "latest", manifest(5), {{"x", randn({64})}});
  fs::path wfile = d.path / "step-000000005.safetensors";
  auto size = fs::file_size(wfile);
  fs::resize_file(wfile, size / 2);
  try {
    load_checkpoint(d.path);
    FAIL() << "no error";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt or truncated"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(wfile.string()), std::string::npos);
    EXPECT_FALSE(e.hint().empty());
  }
  // A bare safetensors file (no manifest) that is truncated: the parser's error, wrapped.
  EXPECT_THROW(load_checkpoint(wfile), FormatError);
}

TEST(TrainCheckpoint, BadManifestsAndMissingFiles) {
  TempDir d;
  fs::create_directories(d.path);
  {
    std::ofstream(d.path / "latest.json") << "{\"format\": 1, \"epoch\": ";
  }
  EXPECT_THROW(load_checkpoint(d.path / "latest.json"), FormatError);
  {
    std::ofstream(d.path / "latest.json") << manifest_to_json([] {
      auto m = manifest(1);
      m.weights = "step-000000001.safetensors";
      return m;
    }());
  }
  EXPECT_THROW(load_checkpoint(d.path / "latest.json"), FormatError);  // names a file that is not there
  EXPECT_THROW(load_checkpoint(d.path / "nope.json"), IOError);
  EXPECT_THROW(load_checkpoint(d.path / "empty_dir_without_ckpt"), IOError);
}

TEST(TrainCheckpoint, RestoreNamesTheMismatchedTensor) {
  TempDir d;
  save_checkpoint(d.path, "latest", manifest(1), {{"model/fc.weight", zeros({784, 128})}, {"model/fc.bias", zeros({128})}});
  Checkpoint ck = load_checkpoint(d.path);
  Tensor w = zeros({784, 64}), b = zeros({128});
  try {
    restore_tensors(ck, "model/", {{"fc.weight", w}, {"fc.bias", b}});
    FAIL();
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("model/fc.weight"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[784, 128]"), std::string::npos) << e.what();
  }
  Tensor w_ok = zeros({784, 128});
  EXPECT_THROW(restore_tensors(ck, "model/", {{"fc.weight", w_ok}}), FormatError);  // extra fc.bias
  EXPECT_THROW(restore_tensors(ck, "model/", {{"fc.weight", w_ok}, {"fc.bias", b}, {"fc2.bias", b}}), FormatError);
}
