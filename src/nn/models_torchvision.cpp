// torchvision's classifiers in the zoo (issue 26): resnet18/34/50, resnet18_cifar and alexnet with
// torchvision 0.14's module tree, so state_dict keys, shapes and order are torchvision's and an
// export loads into torchvision.models.<name>(num_classes=...) with strict=True; and its init.
#include "ember/nn/init.h"
#include "ember/nn/models.h"
#include "ember/ops.h"
#include "nn/models_common.h"

namespace ember::models {

using namespace ember::nn;

namespace {

constexpr int64_t kAlexNetMinSize = 63;

// A stage's block: BasicBlock (nn::ResidualBlock, expansion 1) or Bottleneck (expansion 4).
enum class Block { Basic, Bottleneck };

class ResNet : public Module {
 public:
  // blocks: how many blocks in layer1..layer4. cifar_stem: conv1 3x3 stride 1 and no max-pool.
  ResNet(Block block, std::array<int, 4> blocks, bool cifar_stem, int64_t num_classes, int64_t in_channels,
         Generator* gen)
      : Module("ResNet") {
    const Conv2dOptions stem = cifar_stem ? Conv2dOptions{.padding = {1, 1}, .bias = false}
                                          : Conv2dOptions{.stride = {2, 2}, .padding = {3, 3}, .bias = false};
    conv1 = register_module("conv1", std::make_shared<Conv2d>(in_channels, 64, cifar_stem ? 3 : 7, stem, gen));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(64));
    relu = register_module("relu", std::make_shared<ReLU>());
    // The CIFAR variant drops the max-pool (torchvision users set maxpool = nn.Identity(), which
    // has no state, so the keys are the same).
    if (!cifar_stem) maxpool = register_module("maxpool", std::make_shared<MaxPool2d>(3, 2, 1));
    const int64_t expansion = block == Block::Basic ? 1 : Bottleneck::kExpansion;
    int64_t in = 64;
    for (int stage = 0; stage < 4; ++stage) {
      const int64_t planes = int64_t(64) << stage;
      auto layer = std::make_shared<Sequential>();
      for (int b = 0; b < blocks[size_t(stage)]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        if (block == Block::Basic)
          layer->push_back(std::make_shared<ResidualBlock>(in, planes, stride, gen));
        else
          layer->push_back(std::make_shared<Bottleneck>(in, planes, stride, gen));
        in = planes * expansion;
      }
      layers[stage] = register_module("layer" + std::to_string(stage + 1), layer);
    }
    avgpool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc = register_module("fc", std::make_shared<Linear>(512 * expansion, num_classes, true, gen));
    // torchvision's ResNet.__init__: every conv kaiming_normal_(fan_out, relu) (the block convs
    // too), BatchNorm weight 1 and bias 0 (BatchNorm2d's own init already); fc keeps Linear's
    // default. zero_init_residual is False by default there, so no BN is zeroed here either.
    for (auto& [name, m] : named_modules())
      if (auto* c = dynamic_cast<Conv2d*>(m.get())) init::kaiming_normal_(c->weight, 0.0, "fan_out", "relu", gen);
  }
  Tensor forward(const Tensor& x) override {
    // The stem through conv_bn_activation as the blocks: folded in evaluation under FoldBatchNorm
    // (one primitive, its output held in oneDNN's layout for the max pool; issue 24), conv -> bn ->
    // ReLU otherwise; the relu module still sees its call (forward hooks, summaries).
    Tensor y = nn::conv_bn_activation(*conv1, *bn1, x, nn::functional::ConvActivation::Relu);
    y = relu->call_logged(y, [&] { return y; });
    if (maxpool) y = (*maxpool)(y);
    for (auto& layer : layers) y = (*layer)(y);
    return (*fc)(flatten((*avgpool)(y), 1));
  }
  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<ReLU> relu;
  std::shared_ptr<MaxPool2d> maxpool;  // null in resnet18_cifar
  std::shared_ptr<Sequential> layers[4];
  std::shared_ptr<AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<Linear> fc;
};

// torchvision's AlexNet (the "one weird trick" variant with 64/192/384/256/256 channels). It has no
// init of its own: PyTorch's Conv2d and Linear defaults, as ember's layers draw them.
class AlexNet : public Module {
 public:
  AlexNet(int64_t num_classes, int64_t in_channels, Generator* gen) : Module("AlexNet") {
    auto conv = [&](int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
      return std::make_shared<Conv2d>(in, out, k, Conv2dOptions{.stride = {stride, stride}, .padding = {pad, pad}}, gen);
    };
    auto relu = [] { return std::make_shared<ReLU>(); };
    auto pool = [] { return std::make_shared<MaxPool2d>(3, 2); };
    features = register_module("features", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        conv(in_channels, 64, 11, 4, 2), relu(), pool(), conv(64, 192, 5, 1, 2), relu(), pool(),
        conv(192, 384, 3, 1, 1), relu(), conv(384, 256, 3, 1, 1), relu(), conv(256, 256, 3, 1, 1), relu(), pool()}));
    avgpool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(6));
    classifier = register_module("classifier", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        std::make_shared<Dropout>(0.5), std::make_shared<Linear>(256 * 6 * 6, 4096, true, gen), relu(),
        std::make_shared<Dropout>(0.5), std::make_shared<Linear>(4096, 4096, true, gen), relu(),
        std::make_shared<Linear>(4096, num_classes, true, gen)}));
  }
  Tensor forward(const Tensor& x) override {
    return (*classifier)(flatten((*avgpool)((*features)(x)), 1));
  }
  std::shared_ptr<Sequential> features;
  std::shared_ptr<AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<Sequential> classifier;
};

}  // namespace

std::shared_ptr<Module> resnet18(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("resnet18", num_classes, in_channels, image_size, 1);
  return std::make_shared<ResNet>(Block::Basic, std::array<int, 4>{2, 2, 2, 2}, false, num_classes, in_channels, gen);
}
std::shared_ptr<Module> resnet34(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("resnet34", num_classes, in_channels, image_size, 1);
  return std::make_shared<ResNet>(Block::Basic, std::array<int, 4>{3, 4, 6, 3}, false, num_classes, in_channels, gen);
}
std::shared_ptr<Module> resnet50(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("resnet50", num_classes, in_channels, image_size, 1);
  return std::make_shared<ResNet>(Block::Bottleneck, std::array<int, 4>{3, 4, 6, 3}, false, num_classes, in_channels,
                                  gen);
}
std::shared_ptr<Module> resnet18_cifar(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("resnet18_cifar", num_classes, in_channels, image_size, 1);
  return std::make_shared<ResNet>(Block::Basic, std::array<int, 4>{2, 2, 2, 2}, true, num_classes, in_channels, gen);
}
std::shared_ptr<Module> alexnet(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("alexnet", num_classes, in_channels, image_size, 1);
  // Its stride-4 stem and three 3x3 stride-2 max-pools need a 3x3 map before each pool: 63x63 at least.
  if (image_size < kAlexNetMinSize)
    throw ValueError(detail::cat("alexnet: image_size must be >= ", kAlexNetMinSize, " (its stride-4 stem and three "
                                 "max-pools leave nothing of smaller images), got ", image_size),
                     detail::cat("for ", image_size, "x", image_size, " images use --model alexnet_cifar or resnet18_cifar"));
  return std::make_shared<AlexNet>(num_classes, in_channels, gen);
}

}  // namespace ember::models
