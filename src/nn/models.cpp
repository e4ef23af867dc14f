// The model zoo: small image classifiers with PyTorch's layer names and default init (torchvision's
// classifiers are in models_torchvision.cpp), the name registry and the input-size advice.
#include "ember/nn/models.h"
#include "ember/nn/spec.h"

#include "ember/ops.h"
#include "nn/models_common.h"

#include <cmath>

namespace ember::models {

using namespace ember::nn;
namespace F = ember::nn::functional;

namespace {
class MnistNet : public Module {
 public:
  MnistNet(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen)
      : Module("MnistNet") {
    int64_t pooled = (image_size - 4) / 2;
    conv1 = register_module("conv1", std::make_shared<Conv2d>(in_channels, 32, 3, Conv2dOptions{}, gen));
    conv2 = register_module("conv2", std::make_shared<Conv2d>(32, 64, 3, Conv2dOptions{}, gen));
    dropout1 = register_module("dropout1", std::make_shared<Dropout>(0.25));
    dropout2 = register_module("dropout2", std::make_shared<Dropout>(0.5));
    fc1 = register_module("fc1", std::make_shared<Linear>(64 * pooled * pooled, 128, true, gen));
    fc2 = register_module("fc2", std::make_shared<Linear>(128, num_classes, true, gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = conv1->forward_then(F::ConvActivation::Relu, x);
    y = conv2->forward_then(F::ConvActivation::Relu, y);
    y = F::max_pool2d(y, {.kernel = {2, 2}});
    y = (*dropout1)(y);
    y = flatten(y, 1);
    y = relu((*fc1)(y));
    y = (*dropout2)(y);
    return (*fc2)(y);
  }
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Dropout> dropout1, dropout2;
  std::shared_ptr<Linear> fc1, fc2;
};

class LeNet5 : public Module {
 public:
  LeNet5(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen)
      : Module("LeNet5") {
    int64_t s = ((image_size / 2) - 4) / 2;
    conv1 = register_module("conv1", std::make_shared<Conv2d>(
        in_channels, 6, 5, Conv2dOptions{.padding = {2, 2}}, gen));
    conv2 = register_module("conv2", std::make_shared<Conv2d>(6, 16, 5, Conv2dOptions{}, gen));
    fc1 = register_module("fc1", std::make_shared<Linear>(16 * s * s, 120, true, gen));
    fc2 = register_module("fc2", std::make_shared<Linear>(120, 84, true, gen));
    fc3 = register_module("fc3", std::make_shared<Linear>(84, num_classes, true, gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = F::max_pool2d(conv1->forward_then(F::ConvActivation::Relu, x), {.kernel = {2, 2}});
    y = F::max_pool2d(conv2->forward_then(F::ConvActivation::Relu, y), {.kernel = {2, 2}});
    y = flatten(y, 1);
    y = relu((*fc1)(y));
    y = relu((*fc2)(y));
    return (*fc3)(y);
  }
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<Linear> fc1, fc2, fc3;
};

// The batch-norm CNNs: conv1 (C->16) + bn1 + relu + pool, conv2 (16->width) + bn2 + relu + pool,
// then either one fc (hidden == 0: bncnn) or fc1 (-> hidden) + relu + fc2 (bncnn_fc128,
// bncnn48_fc128). One class, so the three share their conv stages; the layer names (fc vs fc1/fc2)
// and the module name (BnCnn vs BnCnnFc, which the ONNX exporter keys on) follow the variant.
class BnCnn : public Module {
 public:
  BnCnn(int64_t num_classes, int64_t in_channels, int64_t image_size, int64_t width, int64_t hidden, Generator* gen)
      : Module(hidden == 0 ? "BnCnn" : "BnCnnFc") {
    auto conv = [&](int64_t in, int64_t out) {
      return std::make_shared<Conv2d>(in, out, 3, Conv2dOptions{.padding = {1, 1}, .bias = false}, gen);
    };
    conv1 = register_module("conv1", conv(in_channels, 16));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(16));
    conv2 = register_module("conv2", conv(16, width));
    bn2 = register_module("bn2", std::make_shared<BatchNorm2d>(width));
    const int64_t s = image_size / 4, features = width * s * s;
    if (hidden == 0) {
      fc1 = register_module("fc", std::make_shared<Linear>(features, num_classes, true, gen));
    } else {
      fc1 = register_module("fc1", std::make_shared<Linear>(features, hidden, true, gen));
      fc2 = register_module("fc2", std::make_shared<Linear>(hidden, num_classes, true, gen));
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = F::max_pool2d(conv_bn_activation(*conv1, *bn1, x, F::ConvActivation::Relu), {.kernel = {2, 2}});
    y = F::max_pool2d(conv_bn_activation(*conv2, *bn2, y, F::ConvActivation::Relu), {.kernel = {2, 2}});
    y = (*fc1)(flatten(y, 1));
    return fc2 ? (*fc2)(relu(y)) : y;
  }
  std::shared_ptr<Conv2d> conv1, conv2;
  std::shared_ptr<BatchNorm2d> bn1, bn2;
  std::shared_ptr<Linear> fc1, fc2;  // bncnn: fc1 is registered as "fc" and fc2 is null
};

class ResNetSmall : public Module {
 public:
  ResNetSmall(int64_t num_classes, int64_t in_channels, Generator* gen) : Module("ResNetSmall") {
    conv1 = register_module("conv1", std::make_shared<Conv2d>(
        in_channels, 16, 3, Conv2dOptions{.padding = {1, 1}, .bias = false}, gen));
    bn1 = register_module("bn1", std::make_shared<BatchNorm2d>(16));
    int64_t in = 16;
    const int64_t widths[3] = {16, 32, 64};
    for (int stage = 0; stage < 3; ++stage) {
      auto layer = std::make_shared<Sequential>();
      for (int b = 0; b < 2; ++b) {
        int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        layer->push_back(std::make_shared<ResidualBlock>(in, widths[stage], stride, gen));
        in = widths[stage];
      }
      layers[stage] = register_module("layer" + std::to_string(stage + 1), layer);
    }
    pool = register_module("avgpool", std::make_shared<AdaptiveAvgPool2d>(1));
    fc = register_module("fc", std::make_shared<Linear>(64, num_classes, true, gen));
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = conv_bn_activation(*conv1, *bn1, x, F::ConvActivation::Relu);
    for (auto& layer : layers) y = (*layer)(y);
    y = flatten((*pool)(y), 1);
    return (*fc)(y);
  }
  std::shared_ptr<Conv2d> conv1;
  std::shared_ptr<BatchNorm2d> bn1;
  std::shared_ptr<Sequential> layers[3];
  std::shared_ptr<AdaptiveAvgPool2d> pool;
  std::shared_ptr<Linear> fc;
};

class AlexNetCifar : public Module {
 public:
  AlexNetCifar(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen)
      : Module("AlexNetCifar") {
    auto conv = [&](int64_t in, int64_t out) {
      return std::make_shared<Conv2d>(in, out, 3, Conv2dOptions{.padding = {1, 1}}, gen);
    };
    features = register_module("features", std::make_shared<Sequential>(
        std::initializer_list<std::shared_ptr<Module>>{
            conv(in_channels, 64), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
            conv(64, 192), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2),
            conv(192, 384), std::make_shared<ReLU>(),
            conv(384, 256), std::make_shared<ReLU>(),
            conv(256, 256), std::make_shared<ReLU>(), std::make_shared<MaxPool2d>(2)}));
    int64_t s = image_size / 8;
    classifier = register_module("classifier", std::make_shared<Sequential>(
        std::initializer_list<std::shared_ptr<Module>>{
            std::make_shared<Dropout>(0.5), std::make_shared<Linear>(256 * s * s, 1024, true, gen),
            std::make_shared<ReLU>(), std::make_shared<Dropout>(0.5),
            std::make_shared<Linear>(1024, 1024, true, gen), std::make_shared<ReLU>(),
            std::make_shared<Linear>(1024, num_classes, true, gen)}));
  }
  Tensor forward(const Tensor& x) override {
    return (*classifier)(flatten((*features)(x), 1));
  }
  std::shared_ptr<Sequential> features, classifier;
};
}  // namespace

std::shared_ptr<Module> mlp(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("mlp", num_classes, in_channels, image_size, 1);
  return std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Flatten>(),
      std::make_shared<Linear>(in_channels * image_size * image_size, 256, true, gen),
      std::make_shared<ReLU>(), std::make_shared<Linear>(256, num_classes, true, gen)});
}
std::shared_ptr<Module> lenet5(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("lenet5", num_classes, in_channels, image_size, 12);
  return std::make_shared<LeNet5>(num_classes, in_channels, image_size, gen);
}
std::shared_ptr<Module> mnistnet(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("mnistnet", num_classes, in_channels, image_size, 6);
  return std::make_shared<MnistNet>(num_classes, in_channels, image_size, gen);
}
std::shared_ptr<Module> bncnn(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("bncnn", num_classes, in_channels, image_size, 4);
  return std::make_shared<BnCnn>(num_classes, in_channels, image_size, 32, 0, gen);
}
std::shared_ptr<Module> bncnn_fc128(int64_t num_classes, int64_t in_channels, int64_t image_size, Generator* gen) {
  check_zoo_sizes("bncnn_fc128", num_classes, in_channels, image_size, 4);
  return std::make_shared<BnCnn>(num_classes, in_channels, image_size, 32, 128, gen);
}
std::shared_ptr<Module> bncnn48_fc128(int64_t num_classes, int64_t in_channels, int64_t image_size,
                                      Generator* gen) {
  check_zoo_sizes("bncnn48_fc128", num_classes, in_channels, image_size, 4);
  return std::make_shared<BnCnn>(num_classes, in_channels, image_size, 48, 128, gen);
}
std::shared_ptr<Module> resnet_small(int64_t num_classes, int64_t in_channels, int64_t image_size,
                                     Generator* gen) {
  check_zoo_sizes("resnet_small", num_classes, in_channels, image_size, 4);
  return std::make_shared<ResNetSmall>(num_classes, in_channels, gen);
}
std::shared_ptr<Module> alexnet_cifar(int64_t num_classes, int64_t in_channels, int64_t image_size,
                                      Generator* gen) {
  check_zoo_sizes("alexnet_cifar", num_classes, in_channels, image_size, 8);
  EMBER_CHECK(image_size % 8 == 0, ValueError, "alexnet_cifar: image_size must be a multiple of 8, got ",
              image_size);
  return std::make_shared<AlexNetCifar>(num_classes, in_channels, image_size, gen);
}

std::vector<std::string> names() {
  return {"mlp",           "lenet5",   "mnistnet", "bncnn",    "bncnn_fc128",    "bncnn48_fc128", "resnet_small",
          "alexnet_cifar", "resnet18", "resnet34", "resnet50", "resnet18_cifar", "alexnet",      "mobilenet_v2",
          "mobilenet_v3_small", "efficientnet_b0"};
}

namespace {
bool is_imagenet_resnet(const std::string& name) {
  return name == "resnet18" || name == "resnet34" || name == "resnet50";
}
// The zoo models whose parameters do not depend on the image size (a global or adaptive pool before
// the classifier), beyond resnet_small (design size 0: never warned about).
bool pools_globally(const std::string& name) {
  return is_imagenet_resnet(name) || name == "resnet18_cifar" || name == "alexnet" || name == "mobilenet_v2" ||
         name == "mobilenet_v3_small" || name == "efficientnet_b0";
}
}  // namespace

int64_t design_size(const std::string& name) {
  for (const char* n : {"mlp", "lenet5", "mnistnet", "bncnn", "bncnn_fc128", "bncnn48_fc128"})
    if (name == n) return 28;
  if (name == "alexnet_cifar" || name == "resnet18_cifar") return 32;
  if (is_imagenet_resnet(name) || name == "alexnet" || name == "mobilenet_v2" || name == "mobilenet_v3_small" ||
      name == "efficientnet_b0")
    return 224;
  return 0;
}

std::string input_size_warning(const std::string& name, int64_t in_channels, int64_t image_size, int64_t num_classes) {
  const int64_t design = design_size(name);
  if (design == 0) return "";
  if (is_imagenet_resnet(name) && 4 * image_size <= design)
    return detail::cat(name, " is built for ", design, "x", design, " images: at ", image_size, "x", image_size,
                       " its stride-2 stem and max-pool leave layer4 a ", (image_size + 31) / 32, "x",
                       (image_size + 31) / 32, " map, which loses most of the spatial detail; for small images use "
                       "--model resnet18_cifar (resnet18 with a 3x3 stride-1 stem and no max-pool)");
  if (image_size <= 2 * design) return "";
  if (pools_globally(name)) {
    // Same parameters at every size: the cost is compute and activation memory, per pixel.
    const double factor = double(image_size) * double(image_size) / double(design * design);
    return detail::cat(name, " is built for ", design, "x", design, " images: at ", image_size, "x", image_size,
                       " it computes on ", std::round(factor * 10) / 10, " times as many pixels at every layer (its "
                       "parameters stay the same: it pools globally), which trains slowly and in much memory; ",
                       name == "resnet18_cifar" ? "for images this large use --model resnet18 (a stride-4 stem), or "
                                                  "a smaller --image-size"
                                                : "pass a smaller --image-size");
  }
  // Parameter counts from the models themselves, at both sizes (built once, on the CPU).
  Generator gen(0);
  const int64_t at_design = create(name, num_classes, in_channels, design, &gen)->num_parameters();
  const int64_t at_size = create(name, num_classes, in_channels, image_size, &gen)->num_parameters();
  const int64_t resnet = create("resnet_small", num_classes, in_channels, image_size, &gen)->num_parameters();
  auto millions = [](int64_t n) { return detail::cat(std::round(double(n) / 1e4) / 100, " M"); };
  return detail::cat(name, " is built for ", design, "x", design, " images: at ", image_size, "x", image_size,
                     " its flattened features make it ", millions(at_size), " parameters (", millions(at_design), " at ",
                     design, "x", design, "), which trains slowly, in much memory and to a poor accuracy; for images "
                     "this large use --model resnet_small (", millions(resnet), " parameters at any size: it pools "
                     "globally), or a smaller --image-size");
}

std::shared_ptr<Module> create(const std::string& name, int64_t num_classes, int64_t in_channels,
                               int64_t image_size, Generator* gen) {
  if (name == "mlp") return mlp(num_classes, in_channels, image_size, gen);
  if (name == "lenet5") return lenet5(num_classes, in_channels, image_size, gen);
  if (name == "mnistnet") return mnistnet(num_classes, in_channels, image_size, gen);
  if (name == "bncnn") return bncnn(num_classes, in_channels, image_size, gen);
  if (name == "bncnn_fc128") return bncnn_fc128(num_classes, in_channels, image_size, gen);
  if (name == "bncnn48_fc128") return bncnn48_fc128(num_classes, in_channels, image_size, gen);
  if (name == "resnet_small") return resnet_small(num_classes, in_channels, image_size, gen);
  if (name == "alexnet_cifar") return alexnet_cifar(num_classes, in_channels, image_size, gen);
  if (name == "resnet18") return resnet18(num_classes, in_channels, image_size, gen);
  if (name == "resnet34") return resnet34(num_classes, in_channels, image_size, gen);
  if (name == "resnet50") return resnet50(num_classes, in_channels, image_size, gen);
  if (name == "resnet18_cifar") return resnet18_cifar(num_classes, in_channels, image_size, gen);
  if (name == "alexnet") return alexnet(num_classes, in_channels, image_size, gen);
  if (name == "mobilenet_v2") return mobilenet_v2(num_classes, in_channels, image_size, gen);
  if (name == "mobilenet_v3_small") return mobilenet_v3_small(num_classes, in_channels, image_size, gen);
  if (name == "efficientnet_b0") return efficientnet_b0(num_classes, in_channels, image_size, gen);
  if (nn::is_spec_file(name)) return nn::load_model_spec(name, num_classes, in_channels, image_size, gen);
  std::string known;
  for (const auto& n : names()) known += (known.empty() ? "" : ", ") + n;
  throw ValueError("models::create: unknown model '" + name + "'; known models: " + known,
                   "pick one of: " + known + ", or a model spec file (*.toml)");
}

}  // namespace ember::models
