// torchvision's mobile classifiers in the zoo (issue 26): mobilenet_v3_small and efficientnet_b0
// with torchvision 0.14's module tree, so state_dict keys, shapes and order are
// torchvision's and an export loads into torchvision.models.<name>(num_classes=...) with strict=True;
// with its batch-norm eps/momentum, its stochastic-depth schedule and its init.
#include <algorithm>
#include <cmath>

#include "ember/nn/init.h"
#include "ember/nn/models.h"
#include "ember/ops.h"
#include "nn/models_common.h"

namespace ember::models {

using namespace ember::nn;

namespace {

// torchvision's _make_divisible (from the TF MobileNet code): v rounded to the nearest multiple of
// `divisor`, at least `divisor`, and never more than 10% below v.
int64_t make_divisible(double v, int64_t divisor = 8) {
  int64_t new_v = std::max(divisor, int64_t(v + double(divisor) / 2) / divisor * divisor);
  if (double(new_v) < 0.9 * v) new_v += divisor;
  return new_v;
}

enum class Act { None, ReLU, Hardswish, SiLU };

std::shared_ptr<Module> activation(Act a) {
  switch (a) {
    case Act::ReLU: return std::make_shared<ReLU>();
    case Act::Hardswish: return std::make_shared<Hardswish>();
    case Act::SiLU: return std::make_shared<SiLU>();
    case Act::None: break;
  }
  return nullptr;
}

struct Norm {
  double eps, momentum;
};
constexpr Norm kTorchBatchNorm{1e-5, 0.1};    // nn.BatchNorm2d's defaults (efficientnet_b0)
constexpr Norm kMobileNetV3Norm{1e-3, 0.01};  // MobileNetV3: partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)

// torchvision.ops.Conv2dNormActivation: conv (k x k, padding (k - 1) / 2, no bias) -> BatchNorm2d ->
// activation (none for the linear projections), children "0", "1", "2". torchvision's class is an
// nn.Sequential subclass; here it is a plain Sequential (same keys, its repr says Sequential).
std::shared_ptr<Sequential> conv_norm_act(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t groups, Act act,
                                          Norm norm, Generator* gen) {
  auto seq = std::make_shared<Sequential>();
  const int64_t pad = (k - 1) / 2;
  seq->push_back(std::make_shared<Conv2d>(
      in, out, k, Conv2dOptions{.stride = {stride, stride}, .padding = {pad, pad}, .groups = groups, .bias = false}, gen));
  seq->push_back(std::make_shared<BatchNorm2d>(out, norm.eps, norm.momentum));
  if (auto a = activation(act)) seq->push_back(a);
  return seq;
}

// nn.Sigmoid, the scale activation of EfficientNet's squeeze-and-excitation (stateless).
class Sigmoid : public Module {
 public:
  Sigmoid() : Module("Sigmoid") {}
  Tensor forward(const Tensor& x) override { return sigmoid(x); }
};

// torchvision.ops.SqueezeExcitation: scale = scale_activation(fc2(activation(fc1(avgpool(x))))),
// returns scale * x; fc1 (C -> squeeze) and fc2 (squeeze -> C) are 1x1 convs with bias.
// MobileNetV3: ReLU and Hardsigmoid; EfficientNet: SiLU and Sigmoid.
class SqueezeExcitation : public Module {
 public:
  SqueezeExcitation(int64_t channels, int64_t squeeze, Act act, bool hard_scale, Generator* gen)
      : Module("SqueezeExcitation") {
    avgpool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc1 = register_module("fc1", std::make_shared<Conv2d>(channels, squeeze, 1, Conv2dOptions{}, gen));
    fc2 = register_module("fc2", std::make_shared<Conv2d>(squeeze, channels, 1, Conv2dOptions{}, gen));
    activation_ = register_module("activation", activation(act));
    scale_activation = hard_scale ? register_module("scale_activation", std::shared_ptr<Module>(std::make_shared<Hardsigmoid>()))
                                  : register_module("scale_activation", std::shared_ptr<Module>(std::make_shared<Sigmoid>()));
  }
  Tensor forward(const Tensor& x) override {
    Tensor scale = (*fc2)((*activation_)((*fc1)((*avgpool)(x))));
    return mul((*scale_activation)(scale), x);
  }
  std::shared_ptr<AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<Conv2d> fc1, fc2;
  std::shared_ptr<Module> activation_, scale_activation;
};

// ---- MobileNetV3 --------------------------------------------------------------------------------

// One row of torchvision's _mobilenet_v3_conf (width_mult 1, so adjust_channels changes nothing).
struct V3Block {
  int64_t in, kernel, expanded, out;
  bool se, hardswish;
  int64_t stride;
};

// torchvision.models.mobilenetv3.InvertedResidual: `block` = [expand 1x1 CNA (when expanded != in)],
// depthwise k x k CNA (stride), [SqueezeExcitation(expanded, make_divisible(expanded / 4))],
// project 1x1 CNA without activation; plus the input when stride 1 and in == out.
class InvertedResidualV3 : public Module {
 public:
  InvertedResidualV3(const V3Block& c, Generator* gen) : Module("InvertedResidual") {
    const Act act = c.hardswish ? Act::Hardswish : Act::ReLU;
    use_res_connect = c.stride == 1 && c.in == c.out;
    block = register_module("block", std::make_shared<Sequential>());
    if (c.expanded != c.in) block->push_back(conv_norm_act(c.in, c.expanded, 1, 1, 1, act, kMobileNetV3Norm, gen));
    block->push_back(conv_norm_act(c.expanded, c.expanded, c.kernel, c.stride, c.expanded, act, kMobileNetV3Norm, gen));
    if (c.se)
      block->push_back(std::make_shared<SqueezeExcitation>(c.expanded, make_divisible(double(c.expanded / 4)), Act::ReLU,
                                                           true, gen));
    block->push_back(conv_norm_act(c.expanded, c.out, 1, 1, 1, Act::None, kMobileNetV3Norm, gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = (*block)(x);
    return use_res_connect ? add(y, x) : y;
  }
  std::shared_ptr<Sequential> block;
  bool use_res_connect;
};

// torchvision's init shared by MobileNetV3 and EfficientNet: every conv kaiming_normal_(fan_out)
// (gain sqrt(2)) with a zero bias; BatchNorm weight 1, bias 0 (BatchNorm2d's own init already); the
// Linear layers through `init_linear`.
template <class InitLinear>
void init_torchvision_mobile(Module& model, Generator* gen, InitLinear init_linear) {
  for (auto& [name, m] : model.named_modules()) {
    if (auto* c = dynamic_cast<Conv2d*>(m.get())) {
      init::kaiming_normal_(c->weight, 0.0, "fan_out", "leaky_relu", gen);
      if (c->bias.defined()) init::zeros_(c->bias);
    } else if (auto* l = dynamic_cast<Linear*>(m.get())) {
      init_linear(*l);
      init::zeros_(l->bias);
    }
  }
}

class MobileNetV3 : public Module {
 public:
  MobileNetV3(const std::vector<V3Block>& setting, int64_t last_channel, int64_t num_classes, int64_t in_channels,
              Generator* gen)
      : Module("MobileNetV3") {
    features = register_module("features", std::make_shared<Sequential>());
    features->push_back(conv_norm_act(in_channels, setting.front().in, 3, 2, 1, Act::Hardswish, kMobileNetV3Norm, gen));
    for (const auto& c : setting) features->push_back(std::make_shared<InvertedResidualV3>(c, gen));
    const int64_t last_in = setting.back().out, last_out = 6 * last_in;
    features->push_back(conv_norm_act(last_in, last_out, 1, 1, 1, Act::Hardswish, kMobileNetV3Norm, gen));
    avgpool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    classifier = register_module("classifier", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        std::make_shared<Linear>(last_out, last_channel, true, gen), std::make_shared<Hardswish>(),
        std::make_shared<Dropout>(0.2), std::make_shared<Linear>(last_channel, num_classes, true, gen)}));
    init_torchvision_mobile(*this, gen, [gen](Linear& l) { init::normal_(l.weight, 0.0, 0.01, gen); });
  }
  Tensor forward(const Tensor& x) override {
    return (*classifier)(flatten((*avgpool)((*features)(x)), 1));
  }
  std::shared_ptr<Sequential> features;
  std::shared_ptr<AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<Sequential> classifier;
};

// ---- EfficientNet -------------------------------------------------------------------------------

// One stage of torchvision's _efficientnet_conf for b0 (width and depth multipliers 1).
struct MBStage {
  int64_t expand_ratio, kernel, stride, in, out, layers;
};

// torchvision.models.efficientnet.MBConv: `block` = [expand 1x1 CNA (SiLU) when expanded != in],
// depthwise k x k CNA (SiLU, stride), SqueezeExcitation(expanded, max(1, in / 4), SiLU, Sigmoid),
// project 1x1 CNA without activation; with a residual (stride 1, in == out) the block's output goes
// through `stochastic_depth` (row mode; the identity in eval mode) before the input is added.
class MBConv : public Module {
 public:
  MBConv(int64_t expand_ratio, int64_t kernel, int64_t stride, int64_t in, int64_t out, double sd_prob, Generator* gen)
      : Module("MBConv") {
    use_res_connect = stride == 1 && in == out;
    const int64_t expanded = make_divisible(double(in * expand_ratio));
    block = register_module("block", std::make_shared<Sequential>());
    if (expanded != in) block->push_back(conv_norm_act(in, expanded, 1, 1, 1, Act::SiLU, kTorchBatchNorm, gen));
    block->push_back(conv_norm_act(expanded, expanded, kernel, stride, expanded, Act::SiLU, kTorchBatchNorm, gen));
    block->push_back(std::make_shared<SqueezeExcitation>(expanded, std::max<int64_t>(1, in / 4), Act::SiLU, false, gen));
    block->push_back(conv_norm_act(expanded, out, 1, 1, 1, Act::None, kTorchBatchNorm, gen));
    stochastic_depth = register_module("stochastic_depth", std::make_shared<StochasticDepth>(sd_prob, "row"));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = (*block)(x);
    if (!use_res_connect) return y;
    return add((*stochastic_depth)(y), x);
  }
  std::shared_ptr<Sequential> block;
  std::shared_ptr<StochasticDepth> stochastic_depth;
  bool use_res_connect;
};

class EfficientNet : public Module {
 public:
  EfficientNet(const std::vector<MBStage>& setting, double stochastic_depth_prob, int64_t num_classes,
               int64_t in_channels, Generator* gen)
      : Module("EfficientNet") {
    features = register_module("features", std::make_shared<Sequential>());
    features->push_back(conv_norm_act(in_channels, setting.front().in, 3, 2, 1, Act::SiLU, kTorchBatchNorm, gen));
    int64_t total_blocks = 0, block_id = 0;
    for (const auto& s : setting) total_blocks += s.layers;
    for (const auto& s : setting) {
      auto stage = std::make_shared<Sequential>();
      for (int64_t i = 0; i < s.layers; ++i) {
        // Stochastic depth grows linearly with the block's index over the whole network: 0 for the
        // first block, 0.2 * 15/16 for the last of b0's 16 (torchvision's float arithmetic).
        const double sd_prob = stochastic_depth_prob * double(block_id) / double(total_blocks);
        stage->push_back(std::make_shared<MBConv>(s.expand_ratio, s.kernel, i == 0 ? s.stride : 1, i == 0 ? s.in : s.out,
                                                  s.out, sd_prob, gen));
        ++block_id;
      }
      features->push_back(stage);
    }
    const int64_t last_in = setting.back().out, last_out = 4 * last_in;
    features->push_back(conv_norm_act(last_in, last_out, 1, 1, 1, Act::SiLU, kTorchBatchNorm, gen));
    avgpool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    classifier = register_module("classifier", std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
        std::make_shared<Dropout>(0.2), std::make_shared<Linear>(last_out, num_classes, true, gen)}));
    init_torchvision_mobile(*this, gen, [gen](Linear& l) {
      const double range = 1.0 / std::sqrt(double(l.out_features));
      init::uniform_(l.weight, -range, range, gen);
    });
  }
  Tensor forward(const Tensor& x) override {
    return (*classifier)(flatten((*avgpool)((*features)(x)), 1));
  }
  std::shared_ptr<Sequential> features;
  std::shared_ptr<AdaptiveAvgPool2d> avgpool;
  std::shared_ptr<Sequential> classifier;
};

}  // namespace

std::shared_ptr<Module> mobilenet_v3_small(int64_t num_classes, int64_t in_channels, int64_t image_size,
                                           Generator* gen) {
  check_zoo_sizes("mobilenet_v3_small", num_classes, in_channels, image_size, 1);
  // (in, kernel, expanded, out, SE, hardswish, stride): torchvision's table (the paper's Table 2).
  const std::vector<V3Block> setting = {
      {16, 3, 16, 16, true, false, 2},   {16, 3, 72, 24, false, false, 2}, {24, 3, 88, 24, false, false, 1},
      {24, 5, 96, 40, true, true, 2},    {40, 5, 240, 40, true, true, 1},   {40, 5, 240, 40, true, true, 1},
      {40, 5, 120, 48, true, true, 1},   {48, 5, 144, 48, true, true, 1},   {48, 5, 288, 96, true, true, 2},
      {96, 5, 576, 96, true, true, 1},   {96, 5, 576, 96, true, true, 1}};
  return std::make_shared<MobileNetV3>(setting, make_divisible(1024.0), num_classes, in_channels, gen);
}

std::shared_ptr<Module> efficientnet_b0(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("efficientnet_b0", num_classes, in_channels, image_size, 1);
  // (expand ratio, kernel, stride, in, out, layers): torchvision's table (the paper's Table 1).
  const std::vector<MBStage> setting = {{1, 3, 1, 32, 16, 1},  {6, 3, 2, 16, 24, 2},   {6, 5, 2, 24, 40, 2},
                                        {6, 3, 2, 40, 80, 3},  {6, 5, 1, 80, 112, 3},  {6, 5, 2, 112, 192, 4},
                                        {6, 3, 1, 192, 320, 1}};
  return std::make_shared<EfficientNet>(setting, 0.2, num_classes, in_channels, gen);
}

}  // namespace ember::models
