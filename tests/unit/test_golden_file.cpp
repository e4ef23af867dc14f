// Tests the golden-file reader against the committed PyTorch reference files, and that damaged
// files are refused with a message that says what is wrong.
#include "support/test_data.h"
#include "golden/golden_file.h"
#include "support/golden_skip.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

using ember::test::GoldenFile;
using ember::test::GoldenRecord;

const std::string kModels = ember::test::data_path("golden/models_v1.bin");
const std::string kOps = ember::test::data_path("golden/ops_v1.bin");

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Writes `bytes` to a fresh file in the temp dir and returns its path.
std::string write_temp(const std::string& name, const std::vector<uint8_t>& bytes) {
  auto path = std::filesystem::temp_directory_path() /
              ("ember_golden_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               "_" + name);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

// Expects loading `path` to throw std::runtime_error whose message contains `piece` and the path.
void expect_rejected(const std::string& path, const std::string& piece) {
  try {
    GoldenFile file(path);
    ADD_FAILURE() << "loaded a damaged file: " << path;
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(piece), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
  }
}

TEST(GoldenFile, ModelsFileHasWeightsInputsAndTrajectories) {
  EMBER_SKIP_IF_GOLDEN_LEFT_OUT(kModels);
  GoldenFile file(kModels);
  const GoldenRecord& fc1 = file.get("mnistnet/param/fc1.weight");
  EXPECT_EQ(fc1.dtype, ember::test::kGoldenFloat32);
  EXPECT_EQ(fc1.dims, (std::vector<int64_t>{128, 9216}));
  EXPECT_EQ(fc1.numel(), 128 * 9216);
  EXPECT_EQ(fc1.bytes.size(), 128u * 9216u * 4u);

  EXPECT_EQ(file.get("mnistnet/input").dims, (std::vector<int64_t>{8, 1, 28, 28}));
  EXPECT_EQ(file.get("mnistnet/logits").dims, (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(file.get("lenet5/logits").dims, (std::vector<int64_t>{8, 10}));
  EXPECT_EQ(file.get("lenet5/param/conv1.weight").dims, (std::vector<int64_t>{6, 1, 5, 5}));
  EXPECT_EQ(file.get("lenet5/grad/fc3.bias").dims, (std::vector<int64_t>{10}));
  EXPECT_EQ(file.get("mnistnet/loss").numel(), 1);

  const auto labels = file.get("mnistnet/labels").as_int64();
  ASSERT_EQ(labels.size(), 8u);
  for (int64_t y : labels) {
    EXPECT_GE(y, 0);
    EXPECT_LE(y, 9);
  }

  // The first recorded step loss is the loss at the initial weights.
  const auto loss = file.get("mnistnet/loss").as_float();
  const auto sgd = file.get("mnistnet/sgd_losses").as_float();
  const auto adamw = file.get("mnistnet/adamw_losses").as_double();
  ASSERT_EQ(sgd.size(), 10u);
  ASSERT_EQ(adamw.size(), 10u);
  EXPECT_EQ(sgd[0], loss[0]);
  EXPECT_LT(sgd[9], sgd[0]);
  EXPECT_NEAR(loss[0], std::log(10.0f), 0.5f);  // near-uniform logits at init

  // Every parameter has a gradient and a post-SGD value of the same shape.
  const auto params = file.names_with_prefix("mnistnet/param/");
  EXPECT_EQ(params.size(), 8u);
  for (const auto& name : params) {
    const std::string key = name.substr(std::string("mnistnet/param/").size());
    EXPECT_EQ(file.get("mnistnet/grad/" + key).dims, file.get(name).dims) << key;
    EXPECT_EQ(file.get("mnistnet/sgd_final/" + key).dims, file.get(name).dims) << key;
  }
}

TEST(GoldenFile, OpsFileHasFloat64CasesWithParams) {
  GoldenFile file(kOps);
  const GoldenRecord& out = file.get("matmul/broadcast/output");
  EXPECT_EQ(out.dtype, ember::test::kGoldenFloat64);
  EXPECT_EQ(out.dims, (std::vector<int64_t>{2, 5, 3, 2}));

  // conv2d params: stride_h, stride_w, pad_h, pad_w, dilation_h, dilation_w, groups, has_bias
  EXPECT_EQ(file.get("conv2d/stride2/params").as_int64(),
            (std::vector<int64_t>{2, 2, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(file.get("conv2d/stride2/grad_input").dims, file.get("conv2d/stride2/input").dims);
  EXPECT_TRUE(file.has("conv2d/groups2/grad_bias"));
  EXPECT_FALSE(file.has("conv2d/nobias/bias"));

  // A softmax row sums to one; as_float narrows float64 records.
  const auto sm = file.get("softmax/2d_dim1/output").as_double();
  ASSERT_EQ(sm.size(), 24u);
  double row = 0;
  for (int j = 0; j < 6; ++j) row += sm[j];
  EXPECT_NEAR(row, 1.0, 1e-12);
  EXPECT_EQ(file.get("softmax/2d_dim1/output").as_float().size(), 24u);

  EXPECT_EQ(file.get("cross_entropy/mean/output").numel(), 1);
  EXPECT_FALSE(file.names_with_prefix("batch_norm/train/").empty());
  EXPECT_TRUE(file.names_with_prefix("no_such_op/").empty());
}

TEST(GoldenFile, WrongAccessorsAndMissingNamesThrowWithTheName) {
  GoldenFile file(kOps);
  EXPECT_THROW(file.get("conv2d/stride2/params").as_float(), std::runtime_error);
  EXPECT_THROW(file.get("conv2d/stride2/input").as_int64(), std::runtime_error);
  try {
    file.get("conv2d/nope/input");
    ADD_FAILURE() << "missing record did not throw";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("conv2d/nope/input"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ops_v1.bin"), std::string::npos) << msg;
  }
}

TEST(GoldenFile, RejectsTruncatedFile) {
  const auto bytes = read_bytes(kOps);
  ASSERT_GT(bytes.size(), 1000u);
  // Cut inside the data of some record, then inside the header.
  const auto cut = write_temp("truncated.bin", {bytes.begin(), bytes.end() - 100});
  expect_rejected(cut, "truncated");
  const auto tiny = write_temp("tiny.bin", {bytes.begin(), bytes.begin() + 10});
  expect_rejected(tiny, "truncated");
  std::filesystem::remove(cut);
  std::filesystem::remove(tiny);
}

TEST(GoldenFile, RejectsBadMagicVersionAndTrailingBytes) {
  const auto bytes = read_bytes(kOps);

  auto bad_magic = bytes;
  bad_magic[0] = 'X';
  const auto p1 = write_temp("magic.bin", bad_magic);
  expect_rejected(p1, "magic");

  auto bad_version = bytes;
  bad_version[8] = 2;
  const auto p2 = write_temp("version.bin", bad_version);
  expect_rejected(p2, "version 2");

  auto trailing = bytes;
  trailing.push_back(0);
  const auto p3 = write_temp("trailing.bin", trailing);
  expect_rejected(p3, "trailing");

  expect_rejected(ember::test::data_path("golden/does_not_exist.bin"), "cannot open");
  for (const auto& p : {p1, p2, p3}) std::filesystem::remove(p);
}

}  // namespace
