// Layers that need the nn ops: each module against its functional form, BatchNorm2d's running
// statistics and num_batches_tracked, Dropout in train/eval, ResidualBlock shapes and gradients,
// and every zoo model's output shape and summary.
#include <gtest/gtest.h>

#include <ember/ember.h>

using namespace ember;
namespace F = ember::nn::functional;

TEST(NNLayers, ConvAndPoolsMatchFunctional) {
  Generator gen(21);
  Tensor x = randn({2, 3, 9, 9}, {}, &gen);
  nn::Conv2d conv(3, 4, 3, {.stride = {2, 2}, .padding = {1, 1}}, &gen);
  EXPECT_TRUE(allclose(conv(x), F::conv2d(x, conv.weight, conv.bias, {.stride = {2, 2}, .padding = {1, 1}}), 0, 0));
  EXPECT_EQ(conv(x).sizes(), (Shape{2, 4, 5, 5}));
  EXPECT_TRUE(allclose(nn::MaxPool2d(3, 2, 1)(x), F::max_pool2d(x, {.kernel = {3, 3}, .stride = {2, 2}, .padding = {1, 1}}), 0, 0));
  EXPECT_TRUE(allclose(nn::AvgPool2d(2)(x), F::avg_pool2d(x, {.kernel = {2, 2}}), 0, 0));
  EXPECT_EQ(nn::AdaptiveAvgPool2d(1)(x).sizes(), (Shape{2, 3, 1, 1}));
  EXPECT_TRUE(allclose(nn::AdaptiveAvgPool2d(1)(x).flatten(), x.mean({2, 3}).flatten(), 1e-6, 1e-6));
  EXPECT_EQ(nn::Flatten()(x).sizes(), (Shape{2, 243}));
  EXPECT_TRUE(allclose(nn::GELU()(x), gelu(x), 0, 0));
}

TEST(NNLayers, BatchNormTrainAndEval) {
  Generator gen(22);
  nn::BatchNorm2d bn(3);
  Tensor x = add(mul(randn({4, 3, 5, 5}, {}, &gen), 2.0), 1.0);
  Tensor y = bn(x);
  // Training: per-channel batch statistics, so the output has mean 0 and variance 1 per channel.
  EXPECT_LT(y.mean({0, 2, 3}).abs().max().item<float>(), 1e-5f);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  Tensor batch_mean = x.mean({0, 2, 3});
  EXPECT_TRUE(allclose(bn.running_mean, mul(batch_mean, 0.1), 1e-5, 1e-6));
  Tensor batch_var = var(x, {0, 2, 3});  // unbiased, as PyTorch's running update
  EXPECT_TRUE(allclose(bn.running_var, add(mul(batch_var, 0.1), 0.9), 1e-5, 1e-6));
  // Eval: uses the running statistics and does not count.
  bn.eval();
  Tensor ye = bn(x);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 1);
  Tensor expect = div(sub(x, bn.running_mean.view({1, 3, 1, 1})),
                      sqrt(add(bn.running_var.view({1, 3, 1, 1}), 1e-5)));
  EXPECT_TRUE(allclose(ye, expect, 1e-5, 1e-5));
  EXPECT_THROW(bn(zeros({2, 4, 3, 3})), ShapeError);
}

TEST(NNLayers, DropoutTrainEval) {
  Generator gen(23);
  nn::Dropout drop(0.5, &gen);
  Tensor x = ones({1000});
  Tensor y = drop(x);
  int64_t zeros_count = eq(y, 0.0).to(DType::Int64).sum().item<int64_t>();
  EXPECT_GT(zeros_count, 400);
  EXPECT_LT(zeros_count, 600);
  EXPECT_TRUE(allclose(where(eq(y, 0.0), full_like(y, 2.0), y), full_like(y, 2.0), 0, 0));  // kept: 1/(1-p)
  drop.eval();
  EXPECT_TRUE(allclose(drop(x), x, 0, 0));
}

TEST(NNLayers, ResidualBlock) {
  Generator gen(24);
  nn::ResidualBlock same(8, 8, 1, &gen), down(8, 16, 2, &gen);
  EXPECT_EQ(same.downsample, nullptr);
  ASSERT_NE(down.downsample, nullptr);
  Tensor x = randn({2, 8, 10, 10}, {}, &gen);
  EXPECT_EQ(same(x).sizes(), (Shape{2, 8, 10, 10}));
  Tensor y = down(x);
  EXPECT_EQ(y.sizes(), (Shape{2, 16, 5, 5}));
  EXPECT_GE(amin(y).item<float>(), 0.0f);  // ends in ReLU
  y.sum().backward();
  for (auto& [name, p] : down.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().sum().item<float>(), 0.0f) << name;
  }
  std::vector<std::string> keys = down.state_dict().keys();
  EXPECT_EQ(keys.front(), "conv1.weight");
  EXPECT_EQ(keys.back(), "downsample.1.num_batches_tracked");
}

TEST(NNLayers, ZooOutputShapes) {
  struct Case { std::string name; int64_t c, s; };
  for (const Case& k : {Case{"mlp", 1, 28}, Case{"lenet5", 1, 28}, Case{"lenet5", 3, 32},
                        Case{"mnistnet", 1, 28}, Case{"bncnn", 1, 28}, Case{"bncnn", 3, 32},
                        Case{"bncnn", 1, 30}, Case{"bncnn_fc128", 1, 28}, Case{"bncnn_fc128", 3, 32},
                        Case{"bncnn48_fc128", 1, 28}, Case{"bncnn48_fc128", 3, 32},
                        Case{"resnet_small", 1, 28},
                        Case{"resnet_small", 3, 32}, Case{"alexnet_cifar", 3, 32}}) {
    auto model = models::create(k.name, 10, k.c, k.s);
    Tensor y = (*model)(randn({2, k.c, k.s, k.s}));
    EXPECT_EQ(y.sizes(), (Shape{2, 10})) << k.name << " " << k.c << "x" << k.s;
  }
}

TEST(NNLayers, SummaryOfMnistNet) {
  auto model = models::mnistnet();
  std::string s = model->summary({1, 1, 28, 28});
  EXPECT_NE(s.find("conv1 (Conv2d)"), std::string::npos) << s;
  EXPECT_NE(s.find("[1, 32, 26, 26]"), std::string::npos) << s;
  EXPECT_NE(s.find("[1, 64, 24, 24]"), std::string::npos) << s;
  EXPECT_NE(s.find("fc1 (Linear)"), std::string::npos) << s;
  EXPECT_NE(s.find("1,179,776"), std::string::npos) << s;  // fc1: 9216*128 + 128
  EXPECT_NE(s.find("Total params: 1,199,882"), std::string::npos) << s;
  // conv1 2*26*26*32*9 + conv2 2*24*24*64*32*9 + fc1 2*9216*128 + fc2 2*128*10
  EXPECT_NE(s.find("FLOPs (Linear + Conv2d): 23,984,896"), std::string::npos) << s;
  auto resnet = models::resnet_small();
  std::string r = resnet->summary({1, 1, 28, 28});
  EXPECT_NE(r.find("  layer2.0.downsample (Sequential)"), std::string::npos) << r;
  EXPECT_NE(r.find("[1, 64, 7, 7]"), std::string::npos) << r;
}
