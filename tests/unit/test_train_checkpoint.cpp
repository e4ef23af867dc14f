// Checkpoints: round trip, the latest/best protocol, and clear errors for corrupt, truncated or
// mismatched files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>

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

// The loop's state is a typed section of the manifest ("fit_state"): every field survives the
// JSON, 64-bit seeds and offsets exactly, a NaN accuracy as NaN.
TEST(TrainCheckpoint, FitStateRoundTripsThroughTheManifest) {
  CheckpointManifest m = manifest(9);
  FitState& f = m.fit;
  f.micro_batch = 16, f.accumulate = 4, f.val_split = 0.1, f.val_size = 600, f.best_epoch = 3;
  f.best_test_acc = std::numeric_limits<double>::quiet_NaN();
  f.world_size = 3;
  f.rank_rng = {{0xFEDCBA9876543210ull, 12345678901234ull}, {1, 2}};
  f.epoch = FitState::EpochSums{12.5, 40, 0.25, 1.5, 64, 2};
  f.loss_scaler = {{"loss_scale", 32768}, {"loss_scale_skipped", 1}};
  m.weights = "step-000000009.safetensors", m.weights_sha256 = "00";
  const CheckpointManifest back = manifest_from_json(manifest_to_json(m), "m");
  EXPECT_EQ(back.format, 2);
  EXPECT_EQ(back.optimizer_scalars, m.optimizer_scalars);
  ASSERT_TRUE(back.fit.best_test_acc.has_value());
  EXPECT_TRUE(std::isnan(*back.fit.best_test_acc));
  FitState a = back.fit, b = m.fit;
  a.best_test_acc = b.best_test_acc = 0;  // NaN != NaN
  EXPECT_EQ(a, b);
  // An epoch's end: no running sums, no ranks.
  CheckpointManifest e = manifest(10);
  e.weights = "step-000000010.safetensors", e.weights_sha256 = "00";
  const CheckpointManifest eb = manifest_from_json(manifest_to_json(e), "m");
  EXPECT_EQ(eb.fit, FitState{});
}

// A format-1 manifest (ember before the typed section) is read into the same FitState; the
// "fit." scalars leave the optimizer's.
TEST(TrainCheckpoint, Format1FitScalarsAreReadIntoFitState) {
  const std::string old = R"({"format": 1, "epoch": 2, "step": 30, "batch_in_epoch": 5, "seed": 1,
    "rng": {"seed": 7, "offset": 8}, "weights": "step-000000030.safetensors", "weights_sha256": "00",
    "optimizer": {"lr": 0.05, "fit.micro_batch": 32, "fit.accumulate": 2, "fit.val_split": 0.25,
      "fit.val_size": 20, "fit.best_epoch": 1, "fit.best_test_acc": 0.75, "fit.world_size": 2,
      "fit.rng_seed_hi.rank1": 4275878552, "fit.rng_seed_lo.rank1": 1985229328,
      "fit.rng_offset_hi.rank1": 0, "fit.rng_offset_lo.rank1": 99,
      "fit.loss_sum": 3.5, "fit.seen": 160, "fit.correct": 120, "fit.data_time": 0.5, "fit.train_time": 2.5,
      "fit.skipped_in_epoch": 1, "fit.loss_scale": 65536, "fit.loss_scale_good": 12}})";
  const CheckpointManifest m = manifest_from_json(old, "old.json");
  EXPECT_EQ(m.format, 2);
  EXPECT_EQ(m.optimizer_scalars, (std::map<std::string, double>{{"lr", 0.05}}));
  FitState want;
  want.micro_batch = 32, want.accumulate = 2, want.val_split = 0.25, want.val_size = 20, want.best_epoch = 1;
  want.best_test_acc = 0.75, want.world_size = 2;
  want.rank_rng = {{0xFEDCBA9876543210ull, 99}};
  want.epoch = FitState::EpochSums{3.5, 120, 0.5, 2.5, 160, 1};
  want.loss_scaler = {{"loss_scale", 65536}, {"loss_scale_good", 12}};
  EXPECT_EQ(m.fit, want);
  // The oldest: no "fit." scalars at all.
  const CheckpointManifest bare = manifest_from_json(
      R"({"format": 1, "epoch": 1, "step": 3, "batch_in_epoch": 0, "seed": 1, "rng": {"seed": 7, "offset": 8},
          "weights": "w.safetensors", "weights_sha256": "00", "optimizer": {"lr": 0.1}})", "bare.json");
  EXPECT_EQ(bare.fit, FitState{});
}

TEST(TrainCheckpoint, AWrongFitStateNamesTheField) {
  auto with = [](const std::string& fit) {
    return R"({"format": 2, "epoch": 1, "step": 3, "batch_in_epoch": 0, "seed": 1, "rng": {"seed": 7, "offset": 8},
          "weights": "w.safetensors", "weights_sha256": "00", "fit_state": )" + fit + "}";
  };
  auto error = [&](const std::string& fit) {
    try {
      manifest_from_json(with(fit), "bad.json");
    } catch (const FormatError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(R"({"micro_batch": "32"})").find("\"fit_state.micro_batch\" must be an integer"), std::string::npos)
      << error(R"({"micro_batch": "32"})");
  EXPECT_NE(error(R"({"rank_rng": [{"seed": -1, "offset": 0}]})").find("fit_state.rank_rng[0].seed"), std::string::npos);
  EXPECT_NE(error(R"({"world_size": 0})").find("world_size 0"), std::string::npos);
  EXPECT_NE(error(R"({"world_size": 3, "rank_rng": [{"seed": 1, "offset": 2}]})").find("1 rank_rng entries for world_size 3"),
            std::string::npos);
  EXPECT_NE(error(R"({"epoch": 3})").find("fit_state.epoch"), std::string::npos);
  EXPECT_NE(error("[]").find("fit_state"), std::string::npos);
}
