// nn::Module bookkeeping: registration and dotted names, train/eval recursion, zero_grad and
// gradient accumulation, state_dict round trips and load_state_dict errors, in-place to(),
// printing, summary, and the zoo's names and PyTorch state_dict keys.
#include <gtest/gtest.h>

#include <ember/ember.h>

#include <sstream>

#include "support/test_data.h"
#include "golden/golden_file.h"
#include "support/errors.h"
#include "support/golden_skip.h"

using namespace ember;
using ember::test::message_of;

namespace {

// A small custom module with a child Sequential and a buffer, as a user would write one.
class Net : public nn::Module {
 public:
  Net() : Module("Net") {
    fc1 = register_module("fc1", std::make_shared<nn::Linear>(4, 3));
    bn = register_module("bn", std::make_shared<nn::BatchNorm2d>(3));
    head = register_module("head", std::make_shared<nn::Sequential>(
        std::initializer_list<std::shared_ptr<nn::Module>>{std::make_shared<nn::ReLU>(),
                                                           std::make_shared<nn::Linear>(3, 2, false)}));
    scale = register_parameter("scale", ones({2}));
    register_buffer("step_count", zeros({}, {.dtype = DType::Int64}));
  }
  Tensor forward(const Tensor& x) override { return mul((*head)((*fc1)(x)), scale); }
  std::shared_ptr<nn::Linear> fc1;
  std::shared_ptr<nn::BatchNorm2d> bn;
  std::shared_ptr<nn::Sequential> head;
  Tensor scale;
};

std::vector<std::string> names_of(const std::vector<std::pair<std::string, Tensor>>& v) {
  std::vector<std::string> out;
  for (auto& [k, t] : v) out.push_back(k);
  return out;
}
}  // namespace

TEST(NNModule, NamedParametersOrderAndNames) {
  manual_seed(0);
  Net net;
  EXPECT_EQ(names_of(net.named_parameters()),
            (std::vector<std::string>{"scale", "fc1.weight", "fc1.bias", "bn.weight", "bn.bias",
                                      "head.1.weight"}));
  EXPECT_EQ(names_of(net.named_parameters(false)), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(names_of(net.named_buffers()),
            (std::vector<std::string>{"step_count", "bn.running_mean", "bn.running_var",
                                      "bn.num_batches_tracked"}));
  EXPECT_EQ(net.parameters().size(), 6u);
  EXPECT_EQ(net.children().size(), 3u);
  EXPECT_EQ(net.num_parameters(), 2 + 12 + 3 + 3 + 3 + 6);
  std::vector<std::string> mods;
  for (auto& [n, m] : net.named_modules()) mods.push_back(n);
  EXPECT_EQ(mods, (std::vector<std::string>{"fc1", "bn", "head", "head.0", "head.1"}));
  for (auto& p : net.parameters()) EXPECT_TRUE(p.requires_grad());
  for (auto& b : net.buffers()) EXPECT_FALSE(b.requires_grad());
  // The handle in the layer and the one in parameters() are the same tensor.
  EXPECT_TRUE(net.parameters()[1].is_same(net.fc1->weight));
}

TEST(NNModule, RegistrationErrors) {
  nn::Module m("M");
  m.register_parameter("w", zeros({2}));
  EXPECT_NE(message_of<ValueError>([&] { m.register_buffer("w", zeros({2})); }).find("already used"),
            std::string::npos);
  EXPECT_THROW(m.register_parameter("a.b", zeros({2})), ValueError);
  EXPECT_THROW(m.register_parameter("", zeros({2})), ValueError);
  EXPECT_THROW(m.register_module("c", std::shared_ptr<nn::Module>()), ValueError);
  EXPECT_THROW(m.register_parameter("i", zeros({2}, {.dtype = DType::Int64})), DTypeError);
  EXPECT_NE(message_of<NotImplementedError>([&] { m.forward(zeros({1})); }).find("M"), std::string::npos);
}

TEST(NNModule, TrainEvalRecursive) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  EXPECT_FALSE(net.is_training());
  EXPECT_FALSE(net.bn->is_training());
  EXPECT_FALSE(net.head->operator[](0)->is_training());
  net.train();
  EXPECT_TRUE(net.head->operator[](1)->is_training());
  // A child registered into an eval-mode parent takes the parent's mode.
  net.eval();
  auto late = net.register_module("late", std::make_shared<nn::ReLU>());
  EXPECT_FALSE(late->is_training());
}

TEST(NNModule, BackwardAccumulatesAndZeroGrad) {
  manual_seed(1);
  Net net;
  Tensor x = randn({5, 4});
  net(x).sum().backward();
  Tensor g1 = net.fc1->weight.grad().clone();
  ASSERT_TRUE(g1.defined());
  net(x).sum().backward();  // accumulates: grad doubles
  EXPECT_TRUE(allclose(net.fc1->weight.grad(), mul(g1, 2.0), 1e-6, 1e-7));
  net.zero_grad(false);  // zero in place
  ASSERT_TRUE(net.fc1->weight.grad().defined());
  EXPECT_EQ(net.fc1->weight.grad().abs().sum().item<float>(), 0.0f);
  net.zero_grad();  // set to none
  EXPECT_FALSE(net.fc1->weight.grad().defined());
  EXPECT_FALSE(net.scale.grad().defined());
  net(x).sum().backward();
  EXPECT_TRUE(allclose(net.fc1->weight.grad(), g1, 1e-6, 1e-7));
}

TEST(NNModule, StateDictRoundTrip) {
  manual_seed(2);
  Net a;
  manual_seed(3);
  Net b;
  StateDict sd = a.state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"scale", "step_count", "fc1.weight", "fc1.bias",
                                                 "bn.weight", "bn.bias", "bn.running_mean",
                                                 "bn.running_var", "bn.num_batches_tracked",
                                                 "head.1.weight"}));
  EXPECT_TRUE(sd.at("fc1.weight").is_same(a.fc1->weight));  // live tensors
  EXPECT_FALSE(allclose(a.fc1->weight, b.fc1->weight));
  Tensor b_weight_handle = b.fc1->weight;
  b.load_state_dict(sd);
  EXPECT_TRUE(allclose(a.fc1->weight, b.fc1->weight, 0, 0));
  EXPECT_TRUE(allclose(a.head->at<nn::Linear>(1)->weight, b.head->at<nn::Linear>(1)->weight, 0, 0));
  EXPECT_TRUE(b_weight_handle.is_same(b.fc1->weight));  // loaded in place
  EXPECT_TRUE(b.fc1->weight.requires_grad());
  Tensor x = randn({2, 4});
  EXPECT_TRUE(allclose(a(x), b(x), 0, 0));
}

TEST(NNModule, LoadStateDictErrors) {
  Net net;
  StateDict good = net.state_dict();
  auto without = [&](const std::string& drop) {
    StateDict d;
    for (auto& [k, t] : good)
      if (k != drop) d.insert(k, t);
    return d;
  };
  // Missing key.
  std::string msg = message_of<ValueError>([&] { net.load_state_dict(without("fc1.bias")); });
  EXPECT_NE(msg.find("missing key(s): fc1.bias"), std::string::npos) << msg;
  // Unexpected key.
  StateDict extra = net.state_dict();
  extra.insert("fc9.weight", zeros({1}));
  msg = message_of<ValueError>([&] { net.load_state_dict(extra); });
  EXPECT_NE(msg.find("unexpected key(s): fc9.weight"), std::string::npos) << msg;
  // Non-strict: both tolerated.
  StateDict partial = without("fc1.bias");
  partial.insert("fc9.weight", zeros({1}));
  EXPECT_NO_THROW(net.load_state_dict(partial, false));
  // Shape mismatch: names the key and both shapes, even when not strict.
  StateDict bad_shape = without("fc1.weight");
  bad_shape.insert("fc1.weight", zeros({3, 5}));
  msg = message_of<ShapeError>([&] { net.load_state_dict(bad_shape, false); });
  EXPECT_NE(msg.find("fc1.weight"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 5]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[3, 4]"), std::string::npos) << msg;
  // Dtype mismatch: names the key and both dtypes.
  StateDict bad_dtype = without("bn.running_var");
  bad_dtype.insert("bn.running_var", ones({3}, {.dtype = DType::Float64}));
  msg = message_of<DTypeError>([&] { net.load_state_dict(bad_dtype); });
  EXPECT_NE(msg.find("bn.running_var"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float64"), std::string::npos) << msg;
  EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
  // Nothing was modified by the failing loads.
  Tensor before = net.fc1->weight.clone();
  StateDict mixed = without("fc1.weight");
  mixed.set("fc1.weight", full({3, 4}, 7.0));
  mixed.set("fc1.bias", zeros({9}));
  EXPECT_THROW(net.load_state_dict(mixed), ShapeError);
  EXPECT_TRUE(allclose(net.fc1->weight, before, 0, 0));
}

TEST(NNModule, ToDTypeKeepsParameterIdentity) {
  manual_seed(4);
  Net net;
  Tensor w = net.fc1->weight;  // e.g. held by an optimizer
  Tensor x = randn({2, 4});
  net(x).sum().backward();
  Tensor before = w.clone();
  net.to(DType::Float64);
  EXPECT_EQ(w.dtype(), DType::Float64);
  EXPECT_EQ(net.fc1->weight.dtype(), DType::Float64);
  EXPECT_TRUE(w.is_same(net.parameters()[1]));
  EXPECT_TRUE(w.requires_grad());
  EXPECT_EQ(w.grad().dtype(), DType::Float64);
  EXPECT_TRUE(allclose(w.to(DType::Float32), before, 0, 0));
  // Integer buffers keep their dtype, float buffers convert.
  EXPECT_EQ(net.bn->num_batches_tracked.dtype(), DType::Int64);
  EXPECT_EQ(net.bn->running_mean.dtype(), DType::Float64);
  Tensor y = net(x.to(DType::Float64));
  EXPECT_EQ(y.dtype(), DType::Float64);
  net.to(Device::cpu());  // a no-op
  EXPECT_TRUE(w.is_same(net.fc1->weight));
  EXPECT_THROW(net.to(DType::Int64), DTypeError);
}

TEST(NNModule, ReprLikePyTorch) {
  Net net;
  std::ostringstream os;
  os << net;
  EXPECT_EQ(os.str(),
            "Net(\n"
            "  (fc1): Linear(in_features=4, out_features=3, bias=True)\n"
            "  (bn): BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
            "  (head): Sequential(\n"
            "    (0): ReLU()\n"
            "    (1): Linear(in_features=3, out_features=2, bias=False)\n"
            "  )\n"
            ")");
  EXPECT_EQ(nn::Conv2d(1, 6, 5, {.padding = {2, 2}}).repr(),
            "Conv2d(1, 6, kernel_size=(5, 5), stride=(1, 1), padding=(2, 2))");
  EXPECT_EQ(nn::Conv2d(3, 8, 1, {.stride = {2, 2}, .bias = false}).repr(),
            "Conv2d(3, 8, kernel_size=(1, 1), stride=(2, 2), bias=False)");
  EXPECT_EQ(nn::MaxPool2d(2).repr(), "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)");
  EXPECT_EQ(nn::Dropout(0.25).repr(), "Dropout(p=0.25, inplace=False)");
  EXPECT_EQ(nn::Flatten().repr(), "Flatten(start_dim=1, end_dim=-1)");
  EXPECT_EQ(nn::AdaptiveAvgPool2d(1).repr(), "AdaptiveAvgPool2d(output_size=(1, 1))");
  EXPECT_EQ(nn::GELU().repr(), "GELU(approximate='none')");
}

TEST(NNModule, SequentialIndexingAndNames) {
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Linear>(2, 3));
  seq->push_back(std::make_shared<nn::GELU>());
  seq->push_back(std::make_shared<nn::Linear>(3, 1));
  EXPECT_EQ(seq->size(), 3u);
  EXPECT_EQ((*seq)[1]->type_name(), "GELU");
  EXPECT_EQ(seq->at<nn::Linear>(2)->in_features, 3);
  EXPECT_EQ(seq->at<nn::Linear>(1), nullptr);  // wrong type
  EXPECT_THROW((*seq)[3], IndexError);
  EXPECT_EQ(names_of(seq->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));
  EXPECT_EQ((*seq)(zeros({4, 2})).sizes(), (Shape{4, 1}));
}

TEST(NNModule, LinearMatchesFunctional) {
  Generator gen(7);
  nn::Linear fc(5, 3, true, &gen);
  Tensor x = randn({2, 5}, {}, &gen);
  EXPECT_TRUE(allclose(fc(x), add(matmul(x, fc.weight.t()), fc.bias), 1e-6, 1e-6));
  // The same generator seed gives the same weights.
  Generator gen2(7);
  nn::Linear fc2(5, 3, true, &gen2);
  EXPECT_TRUE(allclose(fc.weight, fc2.weight, 0, 0));
}

TEST(NNModule, SummaryOfMlp) {
  auto model = models::mlp();
  std::string s = model->summary({1, 1, 28, 28});
  EXPECT_NE(s.find("0 (Flatten)"), std::string::npos) << s;
  EXPECT_NE(s.find("[1, 784]"), std::string::npos) << s;
  EXPECT_NE(s.find("1 (Linear)"), std::string::npos) << s;
  EXPECT_NE(s.find("200,960"), std::string::npos) << s;   // 784*256 + 256 params
  EXPECT_NE(s.find("401,408"), std::string::npos) << s;   // 2 * 784 * 256 FLOPs
  EXPECT_NE(s.find("Total params: 203,530"), std::string::npos) << s;
  EXPECT_TRUE(model->is_training());  // restored
}

// The summary is printed in the training banner: every zoo model's table fits an 80-column
// terminal (it was 88 columns wide and wrapped every line).
TEST(NNModule, SummaryFitsEightyColumns) {
  for (const auto& name : models::names()) {
    Generator gen(0);
    const bool rgb = name == "resnet_small" || name == "alexnet_cifar" || models::design_size(name) > 28;
    const int64_t c = rgb ? 3 : 1, size = name == "alexnet" ? 64 : rgb ? 32 : 28;  // alexnet: >= 63
    auto model = models::create(name, 10, c, size, &gen);
    std::istringstream lines(model->summary({1, c, size, size}));
    for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 79u) << name << ": " << line;
  }
}

TEST(NNModels, CreateAndNames) {
  EXPECT_EQ(models::names().size(), 16u);
  std::string msg = message_of<ValueError>([] { models::create("vgg99"); });
  EXPECT_NE(msg.find("vgg99"), std::string::npos);
  EXPECT_NE(msg.find("mnistnet"), std::string::npos);
  EXPECT_NE(msg.find("alexnet_cifar"), std::string::npos);
  auto mlp = models::create("mlp", 7, 3, 32);
  EXPECT_EQ(mlp->named_parameters()[0].second.sizes(), (Shape{256, 3 * 32 * 32}));
  EXPECT_EQ((*mlp)(zeros({2, 3, 32, 32})).sizes(), (Shape{2, 7}));
  EXPECT_THROW(models::alexnet_cifar(10, 3, 30), ValueError);
  for (const auto& name : models::names()) {
    int64_t c = name.starts_with("alexnet") ? 3 : 1, s = name == "alexnet" ? 64 : name == "alexnet_cifar" ? 32 : 28;
    auto m = models::create(name, 10, c, s);
    EXPECT_GT(m->num_parameters(), 0) << name;
  }
}

TEST(NNModels, ParameterCounts) {
  EXPECT_EQ(models::mnistnet()->num_parameters(), 1199882);  // pytorch/examples' Net
  EXPECT_EQ(models::lenet5()->num_parameters(), 61706);
  EXPECT_EQ(models::lenet5(10, 3, 32)->named_parameters()[4].second.sizes(), (Shape{120, 576}));
  // conv1 16*9 + bn1 2*16 + conv2 32*16*9 + bn2 2*32 + fc 1568*10 + 10; fc follows the image size
  EXPECT_EQ(models::bncnn()->num_parameters(), 20538);
  EXPECT_EQ(models::bncnn(10, 3, 32)->named_parameters().back().second.sizes(), (Shape{10}));
  EXPECT_EQ(models::bncnn(10, 3, 32)->named_parameters()[6].second.sizes(), (Shape{10, 32 * 8 * 8}));
  // bncnn's convolutions, then fc1 1568*128 + 128 and fc2 128*10 + 10
  EXPECT_EQ(models::bncnn_fc128()->num_parameters(), 206970);
  EXPECT_EQ(models::bncnn_fc128(7, 3, 32)->state_dict().keys().back(), "fc2.bias");
  EXPECT_EQ(models::bncnn_fc128(7, 3, 32)->named_parameters()[6].second.sizes(), (Shape{128, 32 * 8 * 8}));
  // the default model: conv2 16->48 (6912), bn2 96, fc1 2352*128 + 128, fc2 128*10 + 10
  EXPECT_EQ(models::bncnn48_fc128()->num_parameters(), 309658);
  EXPECT_EQ(models::bncnn48_fc128(7, 3, 32)->named_parameters()[6].second.sizes(), (Shape{128, 48 * 8 * 8}));
  EXPECT_EQ(models::bncnn()->state_dict().keys().back(), "fc.bias");
  auto resnet = models::resnet_small();
  auto keys = resnet->state_dict().keys();
  EXPECT_EQ(keys.front(), "conv1.weight");
  EXPECT_NE(std::find(keys.begin(), keys.end(), "layer2.0.downsample.0.weight"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "layer2.0.downsample.1.running_var"), keys.end());
  EXPECT_EQ(std::find(keys.begin(), keys.end(), "layer1.0.downsample.0.weight"), keys.end());
  EXPECT_NE(std::find(keys.begin(), keys.end(), "layer3.1.bn2.num_batches_tracked"), keys.end());
}

// The zoo's mnistnet, lenet5 and bncnn have exactly PyTorch's state_dict keys and shapes.
TEST(NNModels, KeysMatchPyTorchGolden) {
  EMBER_SKIP_IF_GOLDEN_LEFT_OUT(ember::test::data_path("golden/models_v1.bin"));
  test::GoldenFile golden(ember::test::data_path("golden/models_v1.bin"));
  for (std::string name : {"mnistnet", "lenet5", "bncnn"}) {
    auto model = models::create(name);
    std::string prefix = name + "/param/";
    auto golden_names = golden.names_with_prefix(prefix);
    StateDict sd = model->state_dict();
    ASSERT_EQ(sd.size(), golden_names.size()) << name;
    for (auto& [key, t] : sd) {
      ASSERT_TRUE(golden.has(prefix + key)) << name << ": " << key;
      EXPECT_EQ(t.sizes(), golden.get(prefix + key).dims) << key;
    }
  }
}
