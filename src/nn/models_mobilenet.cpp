// torchvision's mobilenet_v2 in the zoo (issue 26), with its module tree (state_dict keys
// features.<i>.conv.<j>..., classifier.1) and init.
#include "ember/nn/init.h"
#include "ember/nn/models.h"
#include "ember/ops.h"
#include "nn/models_common.h"

namespace ember::models {

using namespace ember::nn;

namespace {

// torchvision's Conv2dNormActivation with BatchNorm2d and ReLU6: Sequential(conv without bias,
// padding (k - 1) / 2, BN, ReLU6), children "0", "1", "2".
std::shared_ptr<Sequential> conv_bn_relu6(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t groups,
                                          Generator* gen) {
  const int64_t pad = (k - 1) / 2;
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(in, out, k,
                               Conv2dOptions{.stride = {stride, stride}, .padding = {pad, pad}, .groups = groups,
                                             .bias = false},
                               gen),
      std::make_shared<BatchNorm2d>(out), std::make_shared<ReLU6>()});
}

// torchvision's InvertedResidual: conv = Sequential([1x1 expand + BN + ReLU6 when t != 1], 3x3
// depthwise (stride) + BN + ReLU6, 1x1 project, BN); x + conv(x) when stride 1 and in == out. The
// exporter knows it by its type name and adds the shortcut when the shapes agree (exactly then).
class InvertedResidual : public Module {
 public:
  InvertedResidual(int64_t in, int64_t out, int64_t stride, int64_t expand_ratio, Generator* gen)
      : Module("InvertedResidual"), use_residual(stride == 1 && in == out) {
    const int64_t hidden = in * expand_ratio;
    conv = register_module("conv", std::make_shared<Sequential>());
    if (expand_ratio != 1) conv->push_back(conv_bn_relu6(in, hidden, 1, 1, 1, gen));
    conv->push_back(conv_bn_relu6(hidden, hidden, 3, stride, hidden, gen));
    conv->push_back(std::make_shared<Conv2d>(hidden, out, 1, Conv2dOptions{.bias = false}, gen));
    conv->push_back(std::make_shared<BatchNorm2d>(out));
  }
  Tensor forward(const Tensor& x) override { return use_residual ? add(x, (*conv)(x)) : (*conv)(x); }
  const bool use_residual;
  std::shared_ptr<Sequential> conv;
};

class MobileNetV2 : public Module {
 public:
  MobileNetV2(int64_t num_classes, int64_t in_channels, Generator* gen) : Module("MobileNetV2") {
    features = register_module("features", std::make_shared<Sequential>());
    features->push_back(conv_bn_relu6(in_channels, 32, 3, 2, 1, gen));
    // (expand ratio t, channels c, blocks n, first stride s), width multiplier 1 (channels already
    // multiples of 8).
    const int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2}, {6, 32, 3, 2}, {6, 64, 4, 2},
                                    {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
    int64_t in = 32;
    for (const auto& [t, c, n, s] : settings)
      for (int64_t i = 0; i < n; ++i) {
        features->push_back(std::make_shared<InvertedResidual>(in, c, i == 0 ? s : 1, t, gen));
        in = c;
      }
    features->push_back(conv_bn_relu6(in, 1280, 1, 1, 1, gen));
    classifier = register_module("classifier", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        std::make_shared<Dropout>(0.2), std::make_shared<Linear>(1280, num_classes, true, gen)}));
    // torchvision's init: convs kaiming_normal_(fan_out) (gain sqrt 2) with zero bias, BN 1 and 0
    // (BatchNorm2d's own), Linear normal(0, 0.01) with zero bias.
    for (auto& [name, m] : named_modules()) {
      if (auto* c = dynamic_cast<Conv2d*>(m.get())) init::kaiming_normal_(c->weight, 0.0, "fan_out", "relu", gen);
      if (auto* l = dynamic_cast<Linear*>(m.get())) {
        init::normal_(l->weight, 0.0, 0.01, gen);
        init::zeros_(l->bias);
      }
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = nn::functional::adaptive_avg_pool2d((*features)(x), {1, 1});
    return (*classifier)(flatten(y, 1));
  }
  std::shared_ptr<Sequential> features, classifier;
};

}  // namespace

std::shared_ptr<Module> mobilenet_v2(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("mobilenet_v2", num_classes, in_channels, image_size, 1);
  return std::make_shared<MobileNetV2>(num_classes, in_channels, gen);
}

}  // namespace ember::models
