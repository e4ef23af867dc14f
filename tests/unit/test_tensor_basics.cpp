// Tensor bookkeeping, views, factories, printing, Philox, dtype conversion.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <ember/ember.h>

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

TEST(Philox, KnownAnswerVectors) {
  // Random123 kat_vectors: philox4x32 10 rounds.
  auto z = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(z, (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  auto f = philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(f, (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
}

TEST(Philox, SameSeedSameNumbersAnyThreads) {
  Generator g1(42), g2(42);
  set_num_threads(1);
  Tensor a = randn({100001}, {}, &g1);
  set_num_threads(2);
  Tensor b = randn({100001}, {}, &g2);
  EXPECT_TRUE(a.to_vector<float>() == b.to_vector<float>());
  // Chunking: two fills of 8 continue the stream exactly like one fill of 16 (multiples of 4).
  Generator g3(7), g4(7);
  Tensor c = rand({16}, {}, &g3);
  Tensor d1 = rand({8}, {}, &g4), d2 = rand({8}, {}, &g4);
  EXPECT_TRUE(c.to_vector<float>() == cat({d1, d2}).to_vector<float>());
  Tensor m = randn({200000}, {.dtype = DType::Float64}, &g1);
  EXPECT_NEAR(m.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(ember::std(m).item<double>(), 1.0, 0.01);
  Tensor u = rand({200000}, {}, &g1);
  EXPECT_GE(amin(u).item<float>(), 0.0f);
  EXPECT_LT(amax(u).item<float>(), 1.0f);
  Tensor r = randint(3, 7, {1000}, {.dtype = DType::Int64}, &g1);
  EXPECT_EQ(amin(r).item<int64_t>(), 3);
  EXPECT_EQ(amax(r).item<int64_t>(), 6);
  Tensor p = randperm(10, &g1);
  auto pv = p.to_vector<int64_t>();
  std::sort(pv.begin(), pv.end());
  for (int i = 0; i < 10; ++i) EXPECT_EQ(pv[i], i);
}

TEST(Autograd, SimpleChainAndAccumulation) {
  Tensor x = tensor({1.f, 2.f, 3.f}).requires_grad_();
  Tensor y = (x * x).sum();
  y.backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{2, 4, 6}));
  // Gradients accumulate: a second backward adds.
  (x * 3.0).sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5, 7, 9}));
}

TEST(Autograd, Errors) {
  Tensor x = tensor({1.f, 2.f}).requires_grad_();
  Tensor y = x * x;
  try {
    y.backward();
    FAIL();
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("scalar outputs"), std::string::npos);
  }
  Tensor s = (x * x).sum();
  s.backward();
  try {
    s.backward();
    FAIL();
  } catch (const AutogradError& e) {
    EXPECT_NE(std::string(e.what()).find("second time"), std::string::npos);
  }
  Tensor r = (x * x).sum();
  r.backward({}, true);
  r.backward();  // retain_graph allowed the second
  EXPECT_THROW(tensor({1.f}).backward(), AutogradError);
  {
    NoGradGuard g;
    EXPECT_FALSE((x * 2.0).requires_grad());
  }
  EXPECT_FALSE((x * 2.0).detach().requires_grad());
}

TEST(Ops, MixedDevicesAndShapesAreRefused) {
  EXPECT_THROW(add(ones({2, 3}), ones({4})), ShapeError);
  try {
    matmul(ones({2, 3}), ones({2, 3}));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("2x3 and 2x3"), std::string::npos);
  }
}

// set_num_threads() before the first op must stick: kernel registration (run lazily by the first
// op) sets the default thread count and used to overwrite it. A fresh process is needed, so this
// re-executes the test binary for the statement (threadsafe death-test style).
TEST(Threads, SetNumThreadsBeforeFirstOpSticks) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        set_num_threads(1);
        Tensor t = ones({4});
        std::exit(get_num_threads() == 1 && t.sum().item<float>() == 4.0f ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(Settings, DeterministicFlagDefaultsOffAndRoundTrips) {
  EXPECT_FALSE(deterministic());
  set_deterministic(true);
  EXPECT_TRUE(deterministic());
  set_deterministic(false);
  EXPECT_FALSE(deterministic());
}

TEST(Settings, AllowTf32DefaultsOffAndRoundTrips) {
  EXPECT_FALSE(allow_tf32());
  set_allow_tf32(true);
  EXPECT_TRUE(allow_tf32());
  set_allow_tf32(false);
  EXPECT_FALSE(allow_tf32());
}
