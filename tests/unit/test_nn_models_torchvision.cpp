// The zoo's torchvision twins (resnet18/34/50, resnet18_cifar, alexnet) beyond the golden numbers
// (test_golden_torchvision.cpp): torchvision's parameter counts, its initialisation, the sizes they
// take (a Fashion-MNIST 1x28x28 batch through resnet18; alexnet's minimum), and the size advice.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <algorithm>
#include <cmath>

using namespace ember;
namespace F = ember::nn::functional;

namespace {
// Mean and standard deviation of a tensor's values.
std::pair<double, double> moments(const Tensor& t) {
  auto v = t.to(DType::Float64).to_vector<double>();
  double mean = 0, sq = 0;
  for (double x : v) mean += x;
  mean /= double(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, std::sqrt(sq / double(v.size()))};
}
}  // namespace

// torchvision 0.14's sum(p.numel() for p in model.parameters()) at its defaults (1000 classes).
TEST(NNModelsTorchvision, ParameterCountsAreTorchvisions) {
  Generator gen(0);
  EXPECT_EQ(models::resnet18(1000, 3, 224, &gen)->num_parameters(), 11689512);
  EXPECT_EQ(models::resnet34(1000, 3, 224, &gen)->num_parameters(), 21797672);
  EXPECT_EQ(models::resnet50(1000, 3, 224, &gen)->num_parameters(), 25557032);
  EXPECT_EQ(models::alexnet(1000, 3, 224, &gen)->num_parameters(), 61100840);
  EXPECT_EQ(models::mobilenet_v2(1000, 3, 224, &gen)->num_parameters(), 3504872);
  // resnet18 with a 3x3 stem: 64*3*9 instead of 64*3*49 in conv1, 10 classes (make_golden_torchvision.py).
  EXPECT_EQ(models::resnet18_cifar(10, 3, 32, &gen)->num_parameters(), 11173962);
  // Global pooling: the same parameters at every size.
  EXPECT_EQ(models::resnet18(10, 3, 28, &gen)->num_parameters(), models::resnet18(10, 3, 320, &gen)->num_parameters());
  EXPECT_EQ(models::alexnet(10, 3, 63, &gen)->num_parameters(), models::alexnet(10, 3, 300, &gen)->num_parameters());
  // in_channels changes the first conv only.
  EXPECT_EQ(models::resnet18(10, 1, 28, &gen)->state_dict().at("conv1.weight").sizes(), (Shape{64, 1, 7, 7}));
  EXPECT_EQ(models::alexnet(10, 1, 64, &gen)->state_dict().at("features.0.weight").sizes(), (Shape{64, 1, 11, 11}));
}

TEST(NNModelsTorchvision, StructureAndNames) {
  Generator gen(0);
  auto r50 = models::resnet50(10, 3, 64, &gen);
  const auto keys = r50->state_dict().keys();
  EXPECT_EQ(keys.size(), 320u);  // len(torchvision.models.resnet50().state_dict())
  EXPECT_EQ(keys.front(), "conv1.weight");
  EXPECT_EQ(keys.back(), "fc.bias");
  auto has = [&](const std::string& k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  EXPECT_TRUE(has("layer1.0.downsample.0.weight"));  // 64 -> 256 channels at stride 1
  EXPECT_TRUE(has("layer4.2.bn3.num_batches_tracked"));
  EXPECT_FALSE(has("layer1.1.downsample.0.weight"));
  // v1.5: the stride is on the 3x3 conv2, not on conv1.
  std::shared_ptr<nn::Bottleneck> block;
  for (const auto& [n, m] : r50->named_modules())
    if (n == "layer2.0") block = std::dynamic_pointer_cast<nn::Bottleneck>(m);
  ASSERT_TRUE(block);
  EXPECT_EQ(block->conv1->options.stride, (std::array<int64_t, 2>{1, 1}));
  EXPECT_EQ(block->conv2->options.stride, (std::array<int64_t, 2>{2, 2}));
  auto r18 = models::resnet18(10, 3, 64, &gen);
  std::vector<std::string> children;
  for (const auto& [n, m] : r18->named_children()) children.push_back(n);
  EXPECT_EQ(children, (std::vector<std::string>{"conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3",
                                                "layer4", "avgpool", "fc"}));
  auto cifar = models::resnet18_cifar(10, 3, 32, &gen);
  EXPECT_EQ(cifar->state_dict().keys().size(), r18->state_dict().keys().size());
  EXPECT_EQ(cifar->state_dict().at("conv1.weight").sizes(), (Shape{64, 3, 3, 3}));
  auto alex = models::alexnet(10, 3, 64, &gen);
  EXPECT_EQ(alex->state_dict().keys(),
            (std::vector<std::string>{"features.0.weight", "features.0.bias", "features.3.weight", "features.3.bias",
                                      "features.6.weight", "features.6.bias", "features.8.weight", "features.8.bias",
                                      "features.10.weight", "features.10.bias", "classifier.1.weight",
                                      "classifier.1.bias", "classifier.4.weight", "classifier.4.bias",
                                      "classifier.6.weight", "classifier.6.bias"}));
  EXPECT_NE(alex->repr().find("(avgpool): AdaptiveAvgPool2d(output_size=(6, 6))"), std::string::npos) << alex->repr();
}

// torchvision's ResNet init: kaiming_normal_(fan_out, relu) on every conv, BN weight 1 bias 0, fc as
// nn.Linear (U(-1/sqrt(512), 1/sqrt(512))). AlexNet: PyTorch's defaults (bound 1/sqrt(fan_in)).
TEST(NNModelsTorchvision, InitIsTorchvisions) {
  Generator gen(3);
  auto model = models::resnet18(1000, 3, 224, &gen);
  const StateDict sd = model->state_dict();
  for (const char* key : {"conv1.weight", "layer1.0.conv2.weight", "layer3.1.conv1.weight", "layer4.0.downsample.0.weight"}) {
    const Tensor& w = sd.at(key);
    const double fan_out = double(w.size(0) * w.size(2) * w.size(3));
    auto [mean, sd_] = moments(w);
    EXPECT_NEAR(mean, 0.0, 0.05 * std::sqrt(2.0 / fan_out)) << key;
    EXPECT_NEAR(sd_, std::sqrt(2.0 / fan_out), 0.03 * std::sqrt(2.0 / fan_out)) << key;
  }
  EXPECT_EQ(moments(sd.at("layer2.1.bn2.weight")), (std::pair<double, double>{1.0, 0.0}));
  EXPECT_EQ(moments(sd.at("layer2.1.bn2.bias")), (std::pair<double, double>{0.0, 0.0}));
  const double bound = 1.0 / std::sqrt(512.0);
  auto [m, s] = moments(sd.at("fc.weight"));
  EXPECT_NEAR(s, bound / std::sqrt(3.0), 0.02 * bound);  // uniform(-b, b): sd b / sqrt(3)
  EXPECT_LE(sd.at("fc.weight").abs().max().item<float>(), bound);
  auto alex = models::alexnet(10, 3, 64, &gen);
  const Tensor w = alex->state_dict().at("features.3.weight");  // 192 x 64 x 5 x 5, fan_in 1600
  EXPECT_LE(w.abs().max().item<float>(), 1.0 / 40.0);
  EXPECT_NEAR(moments(w).second, 1.0 / 40.0 / std::sqrt(3.0), 0.02 / 40.0);
}

// `ember train --model resnet18` on Fashion-MNIST builds it for 1x28x28: it must train there.
TEST(NNModelsTorchvision, ResNetsTakeSmallGreyImages) {
  Generator gen(0);
  for (const char* name : {"resnet18", "resnet18_cifar"}) {  // resnet50's Bottleneck: test_golden_torchvision.cpp
    auto model = models::create(name, 10, 1, 28, &gen);
    Tensor x = randn({2, 1, 28, 28}, {}, &gen);
    Tensor logits = (*model)(x);
    EXPECT_EQ(logits.sizes(), (Shape{2, 10})) << name;
    F::cross_entropy(logits, tensor(std::vector<int64_t>{3, 7})).backward();
    EXPECT_TRUE(model->state_dict().at("conv1.weight").grad().defined()) << name;
    model->eval();
    EXPECT_EQ((*model)(randn({1, 1, 28, 28}, {}, &gen)).sizes(), (Shape{1, 10})) << name;
  }
  auto r18 = models::resnet18(10, 3, 112, &gen);
  EXPECT_EQ((*r18)(randn({1, 3, 112, 112}, {}, &gen)).sizes(), (Shape{1, 10}));
}

// torchvision's mobilenet_v2: 17 inverted residual blocks, the shortcut where stride 1 keeps the
// channels, ReLU6 (clamp) activations; it takes small grey images too.
TEST(NNModelsTorchvision, MobileNetV2) {
  Generator gen(0);
  auto model = models::mobilenet_v2(10, 1, 28, &gen);
  const StateDict sd = model->state_dict();
  EXPECT_EQ(sd.size(), 314u);  // len(torchvision.models.mobilenet_v2().state_dict())
  EXPECT_EQ(sd.at("features.0.0.weight").sizes(), (Shape{32, 1, 3, 3}));
  EXPECT_EQ(sd.at("features.1.conv.0.0.weight").sizes(), (Shape{32, 1, 3, 3}));  // t = 1: depthwise first
  EXPECT_EQ(sd.at("features.2.conv.0.0.weight").sizes(), (Shape{96, 16, 1, 1}));  // t = 6: expand
  EXPECT_EQ(sd.at("features.2.conv.1.0.weight").sizes(), (Shape{96, 1, 3, 3}));   // depthwise
  EXPECT_EQ(sd.at("features.17.conv.3.running_var").sizes(), (Shape{320}));
  EXPECT_EQ(sd.at("features.18.0.weight").sizes(), (Shape{1280, 320, 1, 1}));
  EXPECT_EQ(sd.at("classifier.1.weight").sizes(), (Shape{10, 1280}));
  EXPECT_NEAR(moments(sd.at("classifier.1.weight")).second, 0.01, 0.001);  // normal(0, 0.01)
  EXPECT_EQ(moments(sd.at("classifier.1.bias")), (std::pair<double, double>{0.0, 0.0}));
  Tensor logits = (*model)(randn({2, 1, 28, 28}, {}, &gen));
  EXPECT_EQ(logits.sizes(), (Shape{2, 10}));
  F::cross_entropy(logits, tensor(std::vector<int64_t>{1, 2})).backward();
  EXPECT_TRUE(sd.at("features.0.0.weight").grad().defined());
}

TEST(NNModelsTorchvision, AlexNetSizes) {
  Generator gen(0);
  // 63 is the smallest size whose last max-pool still has a 3x3 map; avgpool then repeats 1x1 to 6x6.
  auto model = models::alexnet(10, 3, 63, &gen);
  model->eval();
  EXPECT_EQ((*model)(randn({1, 3, 63, 63}, {}, &gen)).sizes(), (Shape{1, 10}));
  EXPECT_EQ((*model)(randn({1, 3, 100, 100}, {}, &gen)).sizes(), (Shape{1, 10}));  // 2x2 -> 6x6
  try {
    models::create("alexnet", 10, 1, 28);
    FAIL() << "alexnet built for 28x28";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find(">= 63"), std::string::npos) << e.what();
    EXPECT_NE(e.hint().find("resnet18_cifar"), std::string::npos) << e.hint();
  }
}

TEST(NNModelsTorchvision, NamesDesignSizesAndWarnings) {
  const auto names = models::names();
  for (const char* n : {"resnet18", "resnet34", "resnet50", "resnet18_cifar", "alexnet", "mobilenet_v2"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  EXPECT_EQ(models::design_size("resnet50"), 224);
  EXPECT_EQ(models::design_size("alexnet"), 224);
  EXPECT_EQ(models::design_size("resnet18_cifar"), 32);
  // Within reach: no warning.
  EXPECT_EQ(models::input_size_warning("resnet18", 3, 224, 10), "");
  EXPECT_EQ(models::input_size_warning("resnet18", 3, 64, 10), "");
  EXPECT_EQ(models::input_size_warning("resnet18_cifar", 1, 28, 10), "");
  EXPECT_EQ(models::input_size_warning("resnet18_cifar", 3, 64, 10), "");
  EXPECT_EQ(models::input_size_warning("alexnet", 3, 64, 10), "");
  // Small images through an ImageNet stem: names resnet18_cifar.
  const std::string small = models::input_size_warning("resnet18", 1, 28, 10);
  EXPECT_NE(small.find("1x1 map"), std::string::npos) << small;
  EXPECT_NE(small.find("--model resnet18_cifar"), std::string::npos) << small;
  // Large images: the parameters stay, the compute grows.
  const std::string large = models::input_size_warning("resnet18_cifar", 3, 224, 10);
  EXPECT_NE(large.find("49 times as many pixels"), std::string::npos) << large;
  EXPECT_NE(large.find("--model resnet18"), std::string::npos) << large;
  EXPECT_EQ(large.find("flattened"), std::string::npos) << large;
  EXPECT_NE(models::input_size_warning("resnet50", 3, 512, 10), "");
}
