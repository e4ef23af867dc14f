// Tensor (src/core/tensor.cpp): factories and item, views sharing storage, dtype conversion
// (half and bfloat16 rounding), printing, shapes too large to address.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include <ember/ember.h>

#include "core/tensor_util.h"

using namespace ember;

TEST(Tensor, FactoriesAndItem) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.sizes(), (Shape{2, 3}));
  EXPECT_EQ(z.sum().item<float>(), 0.0f);
  EXPECT_EQ(ones({4}).sum().item<float>(), 4.0f);
  EXPECT_EQ(full({2, 2}, 2.5, {.dtype = DType::Float64}).sum().item<double>(), 10.0);
  Tensor a = arange(6).reshape({2, 3});
  EXPECT_EQ(a.at<float>({1, 2}), 5.0f);
  EXPECT_EQ(a.t().at<float>({2, 1}), 5.0f);
  EXPECT_EQ(arange(0, 1, 0.25).numel(), 4);
}

TEST(Tensor, ViewsShareStorage) {
  Tensor a = arange(12).reshape({3, 4});
  Tensor s = a.slice(1, 1, 3);
  EXPECT_EQ(s.sizes(), (Shape{3, 2}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(s.at<float>({2, 1}), 10.0f);
  NoGradGuard g;
  s.fill_(-1);
  EXPECT_EQ(a.at<float>({0, 1}), -1.0f);
  EXPECT_EQ(a.at<float>({0, 0}), 0.0f);
  Tensor p = arange(24).reshape({2, 3, 4}).permute({2, 0, 1});
  EXPECT_EQ(p.sizes(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.at<float>({3, 1, 2}), 23.0f);
  EXPECT_EQ(p.contiguous().to_vector<float>()[1], 4.0f);
  EXPECT_EQ(a.unsqueeze(0).sizes(), (Shape{1, 3, 4}));
  EXPECT_EQ(a.unsqueeze(0).squeeze(0).sizes(), (Shape{3, 4}));
  EXPECT_EQ(ones({3, 1}).expand({2, 3, 4}).sizes(), (Shape{2, 3, 4}));
  EXPECT_EQ(a.narrow(0, 1, 2).sizes(), (Shape{2, 4}));
  EXPECT_EQ(a.select(1, 3).to_vector<float>(), (std::vector<float>{3, 7, 11}));
  EXPECT_EQ(a.select(1, 2).to_vector<float>(), (std::vector<float>{-1, -1, -1}));
  EXPECT_THROW(a.t().view({12}), ShapeError);
  EXPECT_EQ(a.t().reshape({12}).numel(), 12);
}

TEST(Tensor, DTypeConversion) {
  Tensor a = tensor(std::vector<float>{1.5f, -2.25f, 3.0f});
  EXPECT_EQ(a.to(DType::Int64).to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(a.to(DType::BFloat16).to(DType::Float32).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(a.to(DType::Float16).to(DType::Float32).to_vector<float>(), a.to_vector<float>());
  EXPECT_EQ(half_to_float(float_to_half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(1e6f))));
  EXPECT_EQ(half_to_float(float_to_half(5.960464477539063e-08f)), 5.960464477539063e-08f);
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.00390625f)), 1.0f);  // ties to even
  EXPECT_EQ(gt(a, 0.0).to_vector<bool>(), (std::vector<bool>{true, false, true}));
}

TEST(Tensor, Printing) {
  EXPECT_EQ(tensor({1.f, 2.f}).str(), "tensor([1., 2.])");
  EXPECT_EQ(tensor({1.5f, 2.f}).str(), "tensor([1.5000, 2.0000])");
  EXPECT_EQ(arange(4, {.dtype = DType::Int64}).reshape({2, 2}).str(), "tensor([[0, 1],\n        [2, 3]])");
  EXPECT_EQ(ones({1}, {.dtype = DType::Float64}).str(), "tensor([1.], dtype=float64)");
  EXPECT_EQ(gt(tensor({1.f, -1.f}), 0.0).str(), "tensor([ True, False])");
  Tensor x = ones({2}).requires_grad_();
  EXPECT_EQ(x.str(), "tensor([1., 1.], requires_grad=True)");
  EXPECT_NE((x * 2.0).str().find("grad_fn=<MulBackward>"), std::string::npos);
}

// A tensor with no elements is contiguous whatever its shape (as in PyTorch): random fills and
// other kernels that require contiguity used to assert on randn({2, 4, 0}).
TEST(Tensor, EmptyTensorsAreContiguous) {
  for (const Shape& s : {Shape{0}, Shape{2, 4, 0}, Shape{2, 0, 3}, Shape{0, 5}}) {
    EXPECT_TRUE(empty(s).is_contiguous());
    Tensor r = randn(s);
    EXPECT_EQ(r.numel(), 0);
    EXPECT_EQ(r.sizes(), s);
    EXPECT_EQ(rand(s).numel(), 0);
  }
}

// Issue 22: a model spec's out_channels = 9223372036854775807 made conv2d's weight shape
// {2^63-1, 1, 3, 3}, whose element count wrapped: a SIGSEGV, or an out-of-memory message for
// "18446744073709548480 bytes". Counts, strides and bytes are now overflow-checked: a ShapeError
// naming the shape, before anything is allocated.
TEST(Tensor, ShapesTooLargeToAddressAreShapeErrors) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto message = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "<no ShapeError>";
  };
  const std::string numel = message([&] { shape_numel({big, 1, 3, 3}); });
  EXPECT_NE(numel.find("shape [9223372036854775807, 1, 3, 3]: its elements overflow int64"), std::string::npos) << numel;
  EXPECT_EQ(shape_numel({big, 1}), big);
  EXPECT_EQ(shape_numel({int64_t(1) << 62, int64_t(1) << 62, 0}), 0);  // no element: empty, not too large
  EXPECT_EQ(shape_nbytes({3, 5}, DType::Float64), size_t(120));
  const std::string bytes = message([&] { shape_nbytes({int64_t(1) << 61}, DType::Float64); });
  EXPECT_NE(bytes.find("shape [2305843009213693952]: its float64 bytes overflow int64"), std::string::npos) << bytes;
  EXPECT_NE(message([&] { contiguous_strides({2, big, 2}); }).find("its strides overflow"), std::string::npos);
  EXPECT_EQ(contiguous_strides({big}), (Shape{1}));
  // The factories: a ShapeError, never an allocation of a wrapped size.
  EXPECT_NE(message([&] { empty({big, 1, 3, 3}); }).find("its elements overflow"), std::string::npos);
  EXPECT_NE(message([&] { zeros({int64_t(1) << 62}); }).find("its float32 bytes overflow"), std::string::npos);
  EXPECT_NE(message([&] { StorageImpl(std::numeric_limits<size_t>::max() - 10, Device::cpu()); }).find("more than any address space"),
            std::string::npos);
  // Large but addressable: the allocator's out-of-memory error, in MiB, not a wrapped count.
  try {
    empty({int64_t(1) << 60});
    ADD_FAILURE() << "4 EiB allocated";
  } catch (const OutOfMemoryError& e) {
    EXPECT_NE(std::string(e.what()).find("4398046511104 MiB (4611686018427387904 bytes)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(empty({2, big, 0}).numel(), 0);
}
