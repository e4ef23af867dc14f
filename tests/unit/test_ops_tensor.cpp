// The tensor ops added for PyTorch's API (src/ops/math.cpp, reduce_scan.cpp, rearrange.cpp,
// index.cpp) beyond what the op harness checks: PyTorch's result dtypes, its rules at the edges
// (ties, zeros, 0-d and empty tensors, the in-place rule), and bad input -- the typed error and a
// piece of its message, worded as PyTorch's where it has one.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <cmath>

#include "support/errors.h"

using namespace ember;
using ember::test::expect_error;
using ember::test::fake_cuda_tensor;

namespace {
Tensor i64(std::vector<int64_t> v, Shape s = {}) { return tensor(v, std::move(s)); }
Tensor f64(std::vector<double> v, Shape s = {}) { return tensor(v, std::move(s)); }
Tensor bools(std::vector<bool> v, Shape s = {}) { return tensor(v, std::move(s)); }
}  // namespace

TEST(TensorOpsDtypes, FollowPyTorch) {
  const Tensor ints = i64({1, 2, -3});
  EXPECT_EQ(sin(ints).dtype(), DType::Float32);
  EXPECT_EQ(reciprocal(ints).dtype(), DType::Float32);
  EXPECT_EQ(log1p(tensor(std::vector<uint8_t>{1, 2})).dtype(), DType::Float32);
  EXPECT_EQ(floor(ints).dtype(), DType::Int64);
  EXPECT_EQ(floor(ints).to_vector<int64_t>(), (std::vector<int64_t>{1, 2, -3}));
  EXPECT_EQ(cumsum(bools({true, false, true}), 0).dtype(), DType::Int64);
  EXPECT_EQ(cumsum(bools({true, false, true}), 0).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 2}));
  EXPECT_EQ(cumprod(tensor(std::vector<int32_t>{1, 2}), 0).dtype(), DType::Int64);
  EXPECT_EQ(prod(tensor(std::vector<uint8_t>{1, 0})).dtype(), DType::Int64);
  EXPECT_EQ(all(tensor(std::vector<uint8_t>{1, 0})).dtype(), DType::UInt8);  // PyTorch's quirk
  EXPECT_EQ(any(f64({0, 1})).dtype(), DType::Bool);
  EXPECT_EQ(count_nonzero(f64({0, 1, 2})).item<int64_t>(), 2);
  EXPECT_EQ(logsumexp(ints, {0}).dtype(), DType::Float32);
  EXPECT_EQ(isnan(ints).dtype(), DType::Bool);
  EXPECT_FALSE(any(isinf(ints)).item<bool>());
  EXPECT_TRUE(all(isfinite(ints)).item<bool>());
  EXPECT_EQ(logical_not(f64({0, 1.5})).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(bitwise_and(ints, bools({true, false, true})).dtype(), DType::Int64);
  EXPECT_EQ((~bools({true, false})).to_vector<bool>(), (std::vector<bool>{false, true}));
  EXPECT_EQ(floor_divide(ints, f64({2, 2, 2})).dtype(), DType::Float64);
  EXPECT_EQ(nonzero(f64({0, 3})).dtype(), DType::Int64);
  EXPECT_EQ(max(f64({1, 2}, {1, 2}), 1).indices.dtype(), DType::Int64);
  // scatter_add on bool is an or (PyTorch's)
  EXPECT_EQ(scatter_add(bools({false, true, false}), 0, i64({0, 0}, {2}), bools({true, true})).to_vector<bool>(),
            (std::vector<bool>{true, true, false}));
}

TEST(TensorOpsSemantics, PythonDivisionRounding) {
  // Python: 7 // -2 == -4, -7 % 2 == 1, 7 % -2 == -1; floats alike; round half to even.
  EXPECT_EQ(floor_divide(i64({7, -7, 7, -7}), i64({2, 2, -2, -2})).to_vector<int64_t>(), (std::vector<int64_t>{3, -4, -4, 3}));
  EXPECT_EQ((i64({7, -7, 7, -7}) % i64({2, 2, -2, -2})).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, -1, -1}));
  EXPECT_EQ(remainder(f64({-7.5}), f64({2})).item<double>(), 0.5);
  EXPECT_EQ(floor_divide(f64({1, -1}), f64({0, 0})).to_vector<double>(), (std::vector<double>{INFINITY, -INFINITY}));
  EXPECT_EQ(round(f64({0.5, 1.5, 2.5, -0.5})).to_vector<double>(), (std::vector<double>{0, 2, 2, -0.0}));
  EXPECT_EQ(round(f64({1.234567}), 2).item<double>(), 1.23);
  EXPECT_EQ(round(f64({1234.5}), -2).item<double>(), 1200);
}

TEST(TensorOpsSemantics, MaxAlongDimTakesTheFirstTieAndGivesItTheGradient) {
  Tensor x = f64({1, 3, 3, 2, 2, 1}, {2, 3}).requires_grad_();
  auto [values, indices] = max(x, 1);
  EXPECT_EQ(values.to_vector<double>(), (std::vector<double>{3, 2}));
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  values.sum().backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 1, 0, 1, 0, 0}));
  auto [mv, mi] = x.detach().min(0, true);
  EXPECT_EQ(mi.sizes(), (Shape{1, 3}));
  EXPECT_EQ(mi.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_EQ(max(f64({5}, {})).item<double>(), 5);
  auto [zv, zi] = max(f64({7}, {}), 0);  // 0-d: the value itself, index 0
  EXPECT_EQ(zv.item<double>(), 7);
  EXPECT_EQ(zi.item<int64_t>(), 0);
}

TEST(TensorOpsSemantics, ProductGradientsAreExactWithZeros) {
  Tensor x = f64({2, 0, 3, 0, 4}).requires_grad_();
  prod(x).backward();
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0, 0, 0}));
  Tensor y = f64({2, 0, 3, 4}).requires_grad_();
  prod(y).backward();
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 24, 0, 0}));
  Tensor z = f64({2, 0, 3}).requires_grad_();
  cumprod(z, 0).sum().backward();  // d/dz0 = 1 + 0 + 0, d/dz1 = 2 + 2 * 3, d/dz2 = 0
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{1, 8, 0}));
  EXPECT_EQ(prod(zeros({3, 0}), 1).to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(TensorOpsSemantics, NormAndLogsumexpEdges) {
  Tensor x = zeros({3}, {.dtype = DType::Float64}).requires_grad_();
  norm(x).backward();  // PyTorch: zero, not nan, at a zero norm
  EXPECT_EQ(x.grad().to_vector<double>(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(norm(f64({3, -4}), INFINITY).item<double>(), 4);
  EXPECT_EQ(norm(f64({3, -4}), -INFINITY).item<double>(), 3);
  EXPECT_EQ(norm(f64({3, 0, -4}), 0.0).item<double>(), 2);
  EXPECT_EQ(logsumexp(f64({-INFINITY, -INFINITY}), {0}).item<double>(), -INFINITY);
  EXPECT_EQ(logsumexp(f64({INFINITY, 1}), {0}).item<double>(), INFINITY);
  EXPECT_NEAR(logsumexp(f64({1000, 1000}), {0}).item<double>(), 1000 + std::log(2.0), 1e-12);
}

TEST(TensorOpsSemantics, ShapesOfTheRearrangingOps) {
  const Tensor x = arange(24).view({2, 3, 4});
  EXPECT_EQ(repeat(x, {2, 1, 1, 2}).sizes(), (Shape{2, 2, 3, 8}));
  EXPECT_EQ(chunk(arange(5), 3).size(), 3u);
  EXPECT_EQ(chunk(arange(6), 4).size(), 3u);  // pieces of 2: PyTorch gives 3, not 4
  EXPECT_EQ(chunk(zeros({0}), 3).size(), 3u);
  EXPECT_EQ(split(arange(5), 2).back().numel(), 1);
  EXPECT_EQ(x.unflatten(2, {2, -1}).sizes(), (Shape{2, 3, 2, 2}));
  EXPECT_EQ(zeros({1, 3, 1}).squeeze(std::vector<int64_t>{0, 1}).sizes(), (Shape{3, 1}));
  EXPECT_EQ(movedim(x, {0, 1}, {2, 0}).sizes(), (Shape{3, 4, 2}));
  EXPECT_EQ(roll(arange(6).view({2, 3}), {1}).to_vector<float>(), (std::vector<float>{5, 0, 1, 2, 3, 4}));
  EXPECT_EQ(flip(arange(4).view({2, 2}), {0, 1}).to_vector<float>(), (std::vector<float>{3, 2, 1, 0}));
  EXPECT_EQ(triu(ones({3, 3}), 1).to_vector<float>(), (std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(TensorOpsSemantics, AdvancedIndexingAsNumPy) {
  const Tensor x = arange(24, {.dtype = DType::Int64}).view({2, 3, 4});
  // x[[0, 1], :, [1, 2]]: separated indices lead the result.
  EXPECT_EQ(ember::index(x, {i64({0, 1}), Tensor(), i64({1, 2})}).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 5, 9, 14, 18, 22}));
  // x[:, [0, 1], [[1], [2]]]: adjacent ones stay in place: (2, 2, 2).
  EXPECT_EQ(ember::index(x, {Tensor(), i64({0, 1}), i64({1, 2}, {2, 1})}).sizes(), (Shape{2, 2, 2}));
  EXPECT_EQ(ember::index(arange(6, {.dtype = DType::Int64}).view({2, 3}), {bools({true, false, true, false, false, true}, {2, 3})})
                .to_vector<int64_t>(),
            (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(ember::index(x, {i64({-1}, {1})}).sizes(), (Shape{1, 3, 4}));
  EXPECT_EQ(ember::index(x, {i64({-1})}).sizes(), (Shape{3, 4}));  // a 0-d index drops the dim
  EXPECT_EQ(nonzero(f64({3}, {})).sizes(), (Shape{1, 0}));
  EXPECT_EQ(nonzero(f64({0}, {})).sizes(), (Shape{0, 0}));
  EXPECT_EQ(masked_select(f64({1, 2}, {1, 2}), bools({true, false}, {2, 1})).to_vector<double>(), (std::vector<double>{1, 2}));
  // Repeated indices: index's gradient adds up (an index_put with accumulate).
  Tensor v = f64({1, 2, 3}).requires_grad_();
  ember::index(v, {i64({2, 2, 0})}).sum().backward();
  EXPECT_EQ(v.grad().to_vector<double>(), (std::vector<double>{1, 0, 2}));
}

TEST(TensorOpsSemantics, InPlaceFormsWriteThroughAndFollowTheRule) {
  Tensor t = zeros({2, 3});
  t.index_put_({i64({1})}, ones({3}));
  t.index_put_({i64({1, 1})}, full({3}, 2.0), true);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 0, 0, 5, 5, 5}));
  t.masked_fill_(bools({true, false, false}), -1.0);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{-1, 0, 0, -1, 5, 5}));
  t.index_put_({gt(t, 4.0)}, scalar_tensor(7));  // t[t > 4] = 7
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{-1, 0, 0, -1, 7, 7}));
  t.scatter_(1, i64({2, 0}, {2, 1}), 9.0);
  t.scatter_add_(0, i64({0, 0, 0}, {1, 3}), ones({1, 3}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{0, 1, 10, 9, 7, 7}));
  // The in-place rule of add_: not on a tensor that requires grad while grad mode is on.
  Tensor leaf = zeros({3}).requires_grad_();
  expect_error<AutogradError>([&] { leaf.masked_fill_(bools({true, false, true}), 1.0); }, "in-place");
  expect_error<AutogradError>([&] { leaf.index_put_({i64({0}, {1})}, ones({1})); }, "in-place");
  expect_error<AutogradError>([&] { leaf.scatter_(0, i64({0}, {1}), 1.0); }, "in-place");
  {
    NoGradGuard g;
    leaf.scatter_(0, i64({1}, {1}), 4.0);
  }
  EXPECT_EQ(leaf.detach().to_vector<float>(), (std::vector<float>{0, 4, 0}));
}

TEST(TensorOpsBadInput, ElementWise) {
  expect_error<DTypeError>([] { floor(bools({true})); }, "floor: not defined for bool");
  expect_error<DTypeError>([] { round(i64({1}), 2); }, "decimals");
  expect_error<ValueError>([] { floor_divide(i64({4, 5}), i64({2, 0})); }, "integer division by zero");
  expect_error<ValueError>([] { remainder(i64({4}), i64({0})); }, "integer division by zero");
  expect_error<DTypeError>([] { floor_divide(bools({true}), bools({true})); }, "not defined for bool");
  expect_error<ShapeError>([] { remainder(ones({2, 3}), ones({4})); }, "cannot be broadcast");
  expect_error<DTypeError>([] { bitwise_and(ones({2}), ones({2})); }, "expected integer or bool tensors, got float32");
  expect_error<DTypeError>([] { bitwise_not(ones({2})); }, "bitwise_not: expected an integer or bool tensor");
  expect_error<DTypeError>([] { lerp(ones({2}), ones({2}, {.dtype = DType::Float64}), 0.5); }, "for `end`");
  expect_error<DTypeError>([] { lerp(ones({2}), ones({2}), ones({2}, {.dtype = DType::Float64})); }, "for `weight`");
  expect_error<DTypeError>([] { lerp(i64({1}), i64({2}), 0.5); }, "expected floating tensors");
  expect_error<DeviceError>([] { remainder(ones({4}), fake_cuda_tensor({4})); }, "same device");
}

TEST(TensorOpsBadInput, Reductions) {
  expect_error<DTypeError>([] { norm(i64({3, 4})); }, "norm: expected a floating-point tensor");
  expect_error<NotImplementedError>([] { norm(ones({2, 2}), "nuc"); }, "nuclear norm");
  expect_error<ValueError>([] { norm(ones({2, 2}), "frob"); }, "must be a number or \"fro\"");
  expect_error<IndexError>([] { max(zeros({2, 0}), 1); }, "to have non-zero size");
  expect_error<IndexError>([] { cumsum(ones({2, 3}), 2); }, "dimension 2 out of range");
  expect_error<IndexError>([] { prod(ones({2}), -2); }, "out of range");
  expect_error<ValueError>([] { all(ones({2, 3}), {1, -1}); }, "more than once");
}

TEST(TensorOpsBadInput, ShapeOps) {
  expect_error<ShapeError>([] { repeat(ones({2, 3}), {2}); }, "can not be smaller than the number of dimensions");
  expect_error<ValueError>([] { repeat(ones({2}), {-1}); }, "non-negative");
  expect_error<ShapeError>([] { split_with_sizes(ones({5}), {2, 2}); }, "to sum exactly to 5");
  expect_error<ValueError>([] { split(ones({5}), 0); }, "split_size can only be 0 if dimension size is 0");
  expect_error<ValueError>([] { chunk(ones({5}), 0); }, "greater than 0");
  expect_error<ShapeError>([] { unflatten(ones({2, 6}), 1, {4, 2}); }, "don't multiply up to the size of dim 1 (6)");
  expect_error<ValueError>([] { unflatten(ones({2, 6}), 1, {-1, -1}); }, "only one dimension can be inferred");
  expect_error<ValueError>([] { movedim(ones({2, 3, 4}), {0, 1}, {1, 1}); }, "appears multiple times");
  expect_error<ValueError>([] { movedim(ones({2, 3}), {0}, {1, 0}); }, "same number of elements");
  expect_error<ShapeError>([] { tril(ones({3})); }, "at least 2 dimensions");
  expect_error<ValueError>([] { flip(ones({2, 2}), {0, -2}); }, "dim 0 appears multiple times");
  expect_error<ValueError>([] { roll(ones({2, 2}), {1}, {0, 1}); }, "shifts and dimensions must align");
  expect_error<IndexError>([] { squeeze(ones({2}), {3}); }, "out of range");
}

// A gather only copies, so the half types (storage types for arithmetic) take it: a bfloat16
// dataset's rows through index_select, as PyTorch's.
TEST(TensorOpsSemantics, IndexSelectCopiesHalfTypes) {
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    const Tensor x = arange(6.0).reshape({3, 2}).to(dt);
    const Tensor rows = index_select(x, 0, i64({2, 0}));
    ASSERT_EQ(rows.dtype(), dt);
    const Tensor back = rows.to(DType::Float32).contiguous();
    const float* p = back.data_ptr<float>();
    EXPECT_EQ(std::vector<float>(p, p + 4), (std::vector<float>{4, 5, 0, 1}));
  }
}

TEST(TensorOpsBadInput, Indexing) {
  const Tensor x = zeros({2, 3});
  expect_error<DTypeError>([&] { gather(x, 1, ones({2, 3})); }, "expected index to be an int64 (or int32) tensor, got float32");
  expect_error<ShapeError>([&] { gather(x, 1, i64({0, 1})); }, "same number of dimensions");
  expect_error<ShapeError>([&] { gather(x, 1, zeros({3, 3}, {.dtype = DType::Int64})); },
                           "expected index [3, 3] to be no larger than self [2, 3] apart from dimension 1");
  expect_error<IndexError>([&] { gather(x, 1, i64({0, 3}, {2, 1})); }, "index 3 is out of bounds for dimension 1 with size 3");
  expect_error<IndexError>([&] { gather(x, 0, i64({-1}, {1, 1})); }, "index -1 is out of bounds for dimension 0 with size 2");
  expect_error<IndexError>([&] { gather(x, 2, i64({0}, {1, 1})); }, "dimension 2 out of range");
  expect_error<DTypeError>([&] { scatter(x, 1, i64({0}, {1, 1}), ones({1, 1}, {.dtype = DType::Float64})); },
                           "self.dtype to be equal to src.dtype");
  expect_error<ShapeError>([&] { scatter(x, 1, i64({0, 1}, {1, 2}), ones({1, 1})); }, "to be no larger size than src");
  expect_error<NotImplementedError>([&] { scatter(x, 1, i64({0}, {1, 1}), ones({1, 1}), "multiply"); }, "multiply");
  expect_error<ValueError>([&] { scatter(x, 1, i64({0}, {1, 1}), ones({1, 1}), "max"); }, "reduce must be");
  expect_error<IndexError>([&] { index_select(x, 1, i64({0, 1}, {1, 2})); }, "index is supposed to be a vector");
  expect_error<IndexError>([&] { index_select(x, 0, i64({2})); }, "index 2 is out of bounds for dimension 0 with size 2");
  expect_error<ShapeError>([&] { index_add(x, 0, i64({0}), ones({2, 3})); }, "does not match the indexed shape [1, 3]");
  expect_error<DTypeError>([&] { masked_fill(x, i64({1, 0, 1}), 1.0); }, "only supports boolean masks, but got mask with dtype int64");
  expect_error<ShapeError>([&] { masked_fill(x, bools({true, false, true}), ones({1})); }, "0-dimensional value tensor");
  expect_error<ShapeError>([&] { masked_fill(x, bools({true, false}), 1.0); }, "cannot be broadcast");
  expect_error<ShapeError>([] { Tensor t = zeros({3}); t.masked_fill_(bools({true, false, true, true, false, true}, {2, 3}), 1.0); },
                           "cannot be expanded to the tensor's shape [3]");
  expect_error<IndexError>([&] { ember::index(x, {ones({2})}); }, "tensors used as indices must be long, int, byte or bool tensors");
  expect_error<IndexError>([&] { ember::index(x, {bools({true, false, true})}); },
                           "the shape of the mask [3] at index 0 does not match the shape of the indexed tensor [2, 3] at index 0");
  expect_error<IndexError>([&] { ember::index(x, {i64({2})}); }, "index 2 is out of bounds for dimension 0 with size 2");
  expect_error<IndexError>([&] { ember::index(x, {i64({-3})}); }, "index -3 is out of bounds");
  expect_error<IndexError>([&] { ember::index(x, {Tensor(), Tensor(), i64({0})}); }, "too many indices for tensor of dimension 2");
  expect_error<ShapeError>([&] { ember::index(x, {i64({0, 1}), i64({0, 1, 2})}); }, "cannot be broadcast together");
  expect_error<DTypeError>([&] { index_put(x, {i64({0})}, ones({3}, {.dtype = DType::Float64})); }, "dtypes match");
  expect_error<ShapeError>([&] { index_put(x, {i64({0, 1})}, ones({3, 3})); },
                           "value tensor of shape [3, 3] cannot be broadcast to indexing result of shape [2, 3]");
  expect_error<DeviceError>([&] { gather(x, 1, fake_cuda_tensor({2, 3})); }, "same device");
  expect_error<DeviceError>([&] { ember::index(x, {fake_cuda_tensor({1})}); }, "same device");
}
