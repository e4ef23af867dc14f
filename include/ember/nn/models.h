// The model zoo. Every builder returns a fresh model initialised from `gen` (or the default generator) as
// its PyTorch original is: PyTorch's layer defaults, or torchvision's own init (ResNets, MobileNets, EfficientNet).
// All return logits (N, num_classes); none applies softmax. Inputs are (N, in_channels, image_size, image_size).
//
// mnistnet, lenet5 and bncnn use the submodule names of tests/golden/make_golden.py (conv1, conv2,
// dropout1, dropout2, fc1, fc2[, fc3]; bncnn: conv1, bn1, conv2, bn2, fc), so their state_dict
// keys are PyTorch's.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ember/core/generator.h"
#include "ember/nn/layers.h"

namespace ember::models {

// Flatten -> Linear(in_channels * image_size^2, 256) -> ReLU -> Linear(256, num_classes).
std::shared_ptr<nn::Module> mlp(int64_t num_classes = 10, int64_t in_channels = 1,
                                int64_t image_size = 28, Generator* gen = nullptr);
// conv1 (C->6, 5x5, pad 2) -> relu -> maxpool 2 -> conv2 (6->16, 5x5) -> relu -> maxpool 2 ->
// flatten -> fc1 (16*5*5 = 400 at 28x28) -> relu -> fc2 (120->84) -> relu -> fc3 (84->classes).
std::shared_ptr<nn::Module> lenet5(int64_t num_classes = 10, int64_t in_channels = 1,
                                   int64_t image_size = 28, Generator* gen = nullptr);
// pytorch/examples' MNIST net: conv1 (C->32, 3x3) -> relu -> conv2 (32->64, 3x3) -> relu ->
// maxpool 2 -> dropout1 (0.25) -> flatten -> fc1 (9216 at 28x28 -> 128) -> relu -> dropout2 (0.5)
// -> fc2 (128 -> classes).
std::shared_ptr<nn::Module> mnistnet(int64_t num_classes = 10, int64_t in_channels = 1,
                                     int64_t image_size = 28, Generator* gen = nullptr);
// A small batch-norm CNN, the cheap accurate default candidate for 28x28 grey images (issue 12):
// conv1 (C->16, 3x3, pad 1, no bias) -> bn1 -> relu -> maxpool 2 -> conv2 (16->32, 3x3, pad 1, no
// bias) -> bn2 -> relu -> maxpool 2 -> flatten -> fc (32*(s/4)^2 = 1568 at 28x28 -> classes).
// 20,538 parameters at 28x28 / 10 classes; 2.06 MFLOPs forward (lenet5: 0.83).
std::shared_ptr<nn::Module> bncnn(int64_t num_classes = 10, int64_t in_channels = 1, int64_t image_size = 28,
                                  Generator* gen = nullptr);
// bncnn with a hidden layer: bncnn's two conv stages, then fc1 (32*(s/4)^2 = 1568 at 28x28 -> 128)
// -> relu -> fc2 (128 -> classes). 206,970 parameters at 28x28 / 10 classes; 2.44 MFLOPs forward
// (bncnn: 2.06, lenet5: 0.83).
std::shared_ptr<nn::Module> bncnn_fc128(int64_t num_classes = 10, int64_t in_channels = 1, int64_t image_size = 28,
                                        Generator* gen = nullptr);
// The default model of `ember train` (issue 12): bncnn_fc128 with 48 channels in conv2, so fc1 is
// 48*(s/4)^2 = 2352 at 28x28 -> 128. 309,658 parameters at 28x28 / 10 classes; 3.54 MFLOPs forward.
// Its recipe (settings.h) reaches >= 93% Fashion-MNIST test accuracy (docs/benchmarks.md).
std::shared_ptr<nn::Module> bncnn48_fc128(int64_t num_classes = 10, int64_t in_channels = 1,
                                          int64_t image_size = 28, Generator* gen = nullptr);
// A small ResNet for 28x28 / 32x32: stem conv3x3 (C->16) + BN + ReLU, then layer1 (2 blocks,
// 16 ch), layer2 (2 blocks, 32 ch, stride 2), layer3 (2 blocks, 64 ch, stride 2),
// AdaptiveAvgPool2d(1), flatten, fc (64 -> classes). 14 weight layers, ~0.17 M parameters.
std::shared_ptr<nn::Module> resnet_small(int64_t num_classes = 10, int64_t in_channels = 1,
                                         int64_t image_size = 28, Generator* gen = nullptr);
// AlexNet-style network for 32x32 images (image_size must be a multiple of 8): `features` =
// five 3x3 convs (64, 192, 384, 256, 256) with ReLU and three 2x2 max-pools, `classifier` =
// dropout, fc 256*(s/8)^2 -> 1024, ReLU, dropout, fc 1024 -> 1024, ReLU, fc 1024 -> classes.
std::shared_ptr<nn::Module> alexnet_cifar(int64_t num_classes = 10, int64_t in_channels = 3,
                                          int64_t image_size = 32, Generator* gen = nullptr);

// torchvision's classifiers (issue 26; src/nn/models_torchvision.cpp), with torchvision 0.14's
// module tree: the same state_dict keys, shapes, order and buffers (num_batches_tracked included),
// BatchNorm eps 1e-5 / momentum 0.1, so a safetensors export loads into
// torchvision.models.<name>(num_classes=...) with load_state_dict(strict=True). in_channels != 3
// changes only the first conv's weight (conv1 / features.0: C input channels), as replacing that
// conv does in torchvision. Defaults are torchvision's: 1000 classes, RGB, 224x224.
//
// ResNets: conv1 (C->64, 7x7, stride 2, pad 3, no bias) -> bn1 -> relu -> maxpool (3, stride 2,
// pad 1) -> layer1..layer4 (64, 128, 256, 512 planes; the first block of layer2..4 has stride 2 and
// a downsample = Sequential(conv1x1, BN)) -> avgpool (AdaptiveAvgPool2d(1)) -> flatten -> fc.
// Init as torchvision: every conv kaiming_normal_(mode fan_out, relu), BN weight 1 bias 0, fc
// PyTorch's Linear default. Global pooling: any image_size >= 1 builds the same parameters (at
// 28x28 layer4 sees 1x1 maps); designed for 224.
// resnet18: BasicBlock (nn::ResidualBlock) [2, 2, 2, 2], fc 512 -> classes; 11.69 M parameters.
std::shared_ptr<nn::Module> resnet18(int64_t num_classes = 1000, int64_t in_channels = 3, int64_t image_size = 224,
                                     Generator* gen = nullptr);
// resnet34: BasicBlock [3, 4, 6, 3]; 21.80 M parameters.
std::shared_ptr<nn::Module> resnet34(int64_t num_classes = 1000, int64_t in_channels = 3, int64_t image_size = 224,
                                     Generator* gen = nullptr);
// resnet50: nn::Bottleneck [3, 4, 6, 3] (v1.5: stride on the 3x3), fc 2048 -> classes; 25.56 M parameters.
std::shared_ptr<nn::Module> resnet50(int64_t num_classes = 1000, int64_t in_channels = 3, int64_t image_size = 224,
                                     Generator* gen = nullptr);
// resnet18 for 32x32 images (CIFAR): conv1 is 3x3, stride 1, pad 1 (C->64, no bias) and there is no
// maxpool, the usual adaptation (torchvision: model.conv1 = nn.Conv2d(C, 64, 3, 1, 1, bias=False);
// model.maxpool = nn.Identity()); the other keys are resnet18's. 11.17 M parameters at 10 classes.
std::shared_ptr<nn::Module> resnet18_cifar(int64_t num_classes = 10, int64_t in_channels = 3, int64_t image_size = 32,
                                           Generator* gen = nullptr);
// torchvision's AlexNet: features = conv (C->64, 11x11, stride 4, pad 2), relu, maxpool (3, stride
// 2), conv (64->192, 5x5, pad 2), relu, maxpool, conv (192->384, 3x3, pad 1), relu, conv (384->256),
// relu, conv (256->256), relu, maxpool (indices 0..12); avgpool = AdaptiveAvgPool2d(6, 6); flatten;
// classifier = dropout 0.5, fc 9216->4096, relu, dropout 0.5, fc 4096->4096, relu, fc 4096->classes
// (indices 0..6). PyTorch's default init. image_size >= 63 (ValueError below, with a hint); 61.1 M
// parameters at 1000 classes, at every size (the adaptive pool).
std::shared_ptr<nn::Module> alexnet(int64_t num_classes = 1000, int64_t in_channels = 3, int64_t image_size = 224,
                                    Generator* gen = nullptr);
// torchvision's MobileNetV2 (width 1.0; src/nn/models_mobilenet.cpp): features.0 = conv 3x3 stride 2
// (C->32) + BN + ReLU6, features.1..17 = InvertedResidual blocks (expand 1x1 + BN + ReLU6, depthwise
// 3x3 + BN + ReLU6, project 1x1 + BN; x + block(x) at stride 1 with equal channels), features.18 =
// conv 1x1 (320->1280) + BN + ReLU6; adaptive average pool to 1x1, flatten, classifier = dropout 0.2,
// fc 1280->classes. torchvision's init (convs kaiming_normal_ fan_out, Linear normal(0, 0.01), zero
// biases). 3.50 M parameters at 1000 classes; any image_size >= 1, designed for 224.
std::shared_ptr<nn::Module> mobilenet_v2(int64_t num_classes = 1000, int64_t in_channels = 3, int64_t image_size = 224,
                                         Generator* gen = nullptr);


// torchvision's mobile classifiers (issue 26; src/nn/models_mobile.cpp), with torchvision 0.14's
// module tree: the same state_dict keys, shapes, order and buffers (num_batches_tracked included)
// and its init (every conv kaiming_normal_(fan_out) with zero bias, BatchNorm 1/0), so a safetensors
// export loads into torchvision.models.<name>(num_classes=...) with load_state_dict(strict=True).
// in_channels != 3 changes only features.0.0's weight (C input channels). Defaults are
// torchvision's: 1000 classes, RGB, designed for 224x224; every one pools globally, so any
// image_size >= 1 builds the same parameters (at 28x28 the last stage sees 1x1 maps).
// Conv2dNormActivation (conv without bias, BatchNorm2d, activation) is a Sequential with children
// 0, 1[, 2]; SqueezeExcitation has 1x1 convs fc1, fc2 (with bias) around avgpool and activation.
//
// mobilenet_v3_small: features.0 (3x3 stride 2, C -> 16, Hardswish), features.1..11 inverted
// residuals (`block.N`: [expand 1x1], depthwise, [SE: ReLU, Hardsigmoid], project), features.12
// (1x1, 96 -> 576, Hardswish), avgpool, classifier = Linear 576 -> 1024, Hardswish, Dropout(0.2),
// Linear 1024 -> classes. BatchNorm eps 1e-3, momentum 0.01; Linear weights normal(0, 0.01), bias 0.
// 2,542,856 parameters at 1000 classes.
std::shared_ptr<nn::Module> mobilenet_v3_small(int64_t num_classes = 1000, int64_t in_channels = 3,
                                               int64_t image_size = 224, Generator* gen = nullptr);
// efficientnet_b0: features.0 (3x3 stride 2, C -> 32, SiLU), features.1..7 stages of MBConv blocks
// (`block.N`: [expand 1x1], depthwise, SE (SiLU, Sigmoid), project; then `stochastic_depth`, row
// mode, p = 0.2 * block index / 16, on the residual branch only), features.8 (1x1, 320 -> 1280,
// SiLU), avgpool, classifier = Dropout(0.2), Linear 1280 -> classes. BatchNorm eps 1e-5, momentum
// 0.1; Linear weight uniform(-1/sqrt(classes), 1/sqrt(classes)), bias 0. 5,288,548 parameters at
// 1000 classes.
std::shared_ptr<nn::Module> efficientnet_b0(int64_t num_classes = 1000, int64_t in_channels = 3,
                                            int64_t image_size = 224, Generator* gen = nullptr);

// The names create() accepts: "mlp", "lenet5", "mnistnet", "bncnn", "bncnn_fc128", "bncnn48_fc128",
// "resnet_small", "alexnet_cifar", "resnet18", "resnet34", "resnet50", "resnet18_cifar", "alexnet",
// "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0".
std::vector<std::string> names();
// The input size a zoo model was designed for: 28 (the Fashion-MNIST/MNIST models: mlp, lenet5,
// mnistnet, bncnn*), 32 (alexnet_cifar, resnet18_cifar), 224 (resnet18/34/50, alexnet, mobilenet_v2,
// mobilenet_v3_small, efficientnet_b0), 0 for any
// size (resnet_small: global average pooling keeps its parameters the same at every size, and it is
// small enough for large images) and for names create() does not know (spec files).
int64_t design_size(const std::string& name);
// A warning for a zoo model given images far from the size it was designed for, "" when the size is
// within reach (or the model is size-independent):
//  - more than twice its design_size per side: a model that flattens its features grows its first
//    fully connected layer with the square of the size (bncnn48_fc128 at 224x224: 19.3 M parameters
//    against 0.31 M at 28x28) and trains slowly, in gigabytes, to a poor accuracy (names the models
//    that fit); a globally pooled one (resnet18_cifar, the torchvision models) keeps its parameters
//    but computes on (size / design)^2 as many pixels at every layer;
//  - a quarter of its design_size or less, for the ImageNet ResNets: the stride-2 stem and max-pool
//    leave layer4 a 1x1 map; names resnet18_cifar.
std::string input_size_warning(const std::string& name, int64_t in_channels, int64_t image_size, int64_t num_classes);

// Builds a model by name, or from a model spec file when name ends in .toml (see nn/spec.h);
// ValueError listing the known names for an unknown one.
std::shared_ptr<nn::Module> create(const std::string& name, int64_t num_classes = 10,
                                   int64_t in_channels = 1, int64_t image_size = 28,
                                   Generator* gen = nullptr);

}  // namespace ember::models
