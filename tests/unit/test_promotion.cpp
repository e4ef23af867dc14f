// PyTorch's promotion for the Python API (ember/core/promotion.h): result_type over tensors with
// dims, 0-d tensors and Python numbers, can_cast; and the factories of ember/factories.h
// (linspace, eye). Python compares result_type with torch.result_type over the whole grid
// (tests/python/pkg/test_torch_tensor.py); these are the rules written out.
#include <gtest/gtest.h>

#include <vector>

#include <ember/ember.h>
#include <ember/core/promotion.h>
#include <ember/factories.h>

using namespace ember;

namespace {
constexpr OperandRank kDim = OperandRank::Dimensioned, kZero = OperandRank::ZeroDim, kNum = OperandRank::Number;
}  // namespace

TEST(Promotion, DimensionedTensorsPromoteAsTheLattice) {
  EXPECT_EQ(result_type({DType::Int32, kDim}, {DType::Float16, kDim}), DType::Float16);
  EXPECT_EQ(result_type({DType::BFloat16, kDim}, {DType::Float16, kDim}), DType::Float32);
  EXPECT_EQ(result_type({DType::Bool, kDim}, {DType::UInt8, kDim}), DType::UInt8);
}

TEST(Promotion, ZeroDimAndNumbersRaiseOnlyTheCategory) {
  EXPECT_EQ(result_type({DType::Int32, kDim}, {DType::Int64, kZero}), DType::Int32);
  EXPECT_EQ(result_type({DType::Int32, kDim}, {DType::Float64, kZero}), DType::Float64);
  EXPECT_EQ(result_type({DType::Float16, kDim}, {DType::Float64, kZero}), DType::Float16);
  EXPECT_EQ(result_type({DType::Int32, kDim}, {DType::Float64, kNum}), DType::Float32);  // 2.5: the default float
  EXPECT_EQ(result_type({DType::Int32, kDim}, {DType::Float64, kNum}, DType::Float64), DType::Float64);
  EXPECT_EQ(result_type({DType::UInt8, kDim}, {DType::Int64, kNum}), DType::UInt8);
  EXPECT_EQ(result_type({DType::Bool, kDim}, {DType::Int64, kNum}), DType::Int64);
  EXPECT_EQ(result_type({DType::Bool, kDim}, {DType::Bool, kNum}), DType::Bool);
  EXPECT_EQ(result_type({DType::Int64, kZero}, {DType::Float64, kNum}), DType::Float32);
  EXPECT_EQ(result_type({DType::Int32, kZero}, {DType::Int64, kZero}), DType::Int64);
}

TEST(Promotion, CanCastRefusesALowerCategory) {
  EXPECT_TRUE(can_cast(DType::Int64, DType::Float16));
  EXPECT_TRUE(can_cast(DType::Float64, DType::BFloat16));
  EXPECT_FALSE(can_cast(DType::Float32, DType::Int64));
  EXPECT_FALSE(can_cast(DType::Int32, DType::Bool));
  EXPECT_TRUE(can_cast(DType::Bool, DType::UInt8));
}

TEST(Factories, LinspaceHitsBothEnds) {
  Tensor t = linspace(-1.0, 2.0, 7, {.dtype = DType::Float64});
  std::vector<double> v = t.to_vector<double>();
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v.front(), -1.0);
  EXPECT_EQ(v.back(), 2.0);
  EXPECT_DOUBLE_EQ(v[3], 0.5);
  EXPECT_EQ(linspace(3.0, 5.0, 1).to_vector<float>(), std::vector<float>{3.0f});
  EXPECT_EQ(linspace(0.0, 1.0, 0).numel(), 0);
  EXPECT_THROW(linspace(0.0, 1.0, -1), ValueError);
}

TEST(Factories, EyeIsTheIdentity) {
  Tensor e = eye(2, 3, {.dtype = DType::Int64});
  EXPECT_EQ(e.sizes(), (Shape{2, 3}));
  EXPECT_EQ(e.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0, 1, 0}));
  EXPECT_EQ(eye(3).sum().item<float>(), 3.0f);
}
